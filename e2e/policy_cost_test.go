package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

// celCost is what one policy's CEL costs for one pod, in CEL's cost units, as the API server
// counts them against its budgets: its matchConditions (2.5M a policy,
// RuntimeCELCostBudgetMatchConditions) and its mutation or validations (10M, RuntimeCELCostBudget),
// the variables they read included.
type celCost struct {
	match, body int64
}

// compiledPolicy is a MutatingAdmissionPolicy or ValidatingAdmissionPolicy compiled as the API
// server compiles it (k8s.io/apiserver pkg/admission/plugin/policy/mutating/compilation.go,
// compilePolicy; the validating plugin's likewise): its variables composited, its
// matchConditions, and its JSON Patch or its validations.
type compiledPolicy struct {
	// resize: the policy judges UPDATE of pods/resize, and reads the pod before it (oldObject).
	resize   bool
	compiler *plugincel.CompositedCompiler
	match    plugincel.ConditionEvaluator
	mutation plugincel.MutatingEvaluator
	validate plugincel.ConditionEvaluator
}

func compileAdmissionPolicy(t testing.TB, variables []admissionregistrationv1.Variable,
	conditions []admissionregistrationv1.MatchCondition) *compiledPolicy {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range variables {
		if r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts,
			environment.StoredExpressions); r.Error != nil {
			t.Fatalf("variable %s: %v", v.Name, r.Error)
		}
	}
	accessors := make([]plugincel.ExpressionAccessor, len(conditions))
	for i := range conditions {
		accessors[i] = (*matchconditions.MatchCondition)(&conditions[i])
	}
	return &compiledPolicy{compiler: compiler, match: compiler.CompileCondition(accessors, opts, environment.StoredExpressions)}
}

// cost runs the policy on pod in namespace ns, as its dispatcher does, and returns what it cost.
// errNotAPod is a pod the API server refuses before admission (a quantity it does not read).
var errNotAPod = fmt.Errorf("not a Pod the API server decodes")

func (p *compiledPolicy) cost(t testing.TB, pod map[string]any, ns *corev1.Namespace) (celCost, error) {
	t.Helper()
	// As the API server hands it to CEL: a typed Pod made unstructured (quantities as strings).
	var typed corev1.Pod
	raw, err := json.Marshal(pod)
	if err == nil && json.Unmarshal(raw, &typed) != nil {
		return celCost{}, errNotAPod
	}
	if err != nil {
		return celCost{}, err
	}
	typed.APIVersion, typed.Kind = "v1", "Pod"
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&typed)
	if err != nil {
		return celCost{}, err
	}
	obj := &unstructured.Unstructured{Object: content}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	attr := admission.NewAttributesRecord(obj, nil, gvk, ns.Name, obj.GetName(), gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "e2e"})
	versioned := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(obj)}
	if p.resize { // a resize of the pod: the same pod before it, every part read on both sides
		old := obj.DeepCopy()
		attr = admission.NewAttributesRecord(obj, old, gvk, ns.Name, obj.GetName(), gvr, "resize", admission.Update,
			&metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "e2e"})
		versioned = &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk,
			VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(old)}
	}
	request := plugincel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	ctx := p.compiler.CreateContext(context.Background())
	var c celCost
	results, left, err := p.match.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, ns,
		celconfig.RuntimeCELCostBudgetMatchConditions)
	if err != nil {
		return c, fmt.Errorf("matchConditions: %w", err)
	}
	c.match = celconfig.RuntimeCELCostBudgetMatchConditions - left
	for _, r := range results {
		if r.Error != nil {
			return c, fmt.Errorf("matchCondition %s: %w", r.ExpressionAccessor.GetExpression(), r.Error)
		}
		if r.EvalResult.Value() != true {
			return c, nil // not matched: no mutation, no validation
		}
	}
	budget := int64(celconfig.RuntimeCELCostBudget)
	if p.mutation != nil {
		r, left, err := p.mutation.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, ns, budget)
		if err == nil && r.Error != nil {
			err = r.Error
		}
		if err != nil {
			return c, fmt.Errorf("the mutation: %w", err)
		}
		c.body = budget - left
	}
	if p.validate != nil {
		results, left, err := p.validate.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, ns, budget)
		if err != nil {
			return c, fmt.Errorf("the validations: %w", err)
		}
		for _, r := range results {
			if r.Error != nil {
				return c, fmt.Errorf("validation %s: %w", r.ExpressionAccessor.GetExpression(), r.Error)
			}
		}
		c.body = budget - left
	}
	return c, nil
}

// exportedPolicies compiles what `shmguard policy export` writes with the default policy: the
// mutating policy and the four validating ones (creation's and resize's), by name, in the order written. With
// validateAll, the validating policies have no matchConditions: they validate every pod, as
// if the mutating policy had not judged it ok.
func exportedPolicies(t testing.TB, validateAll bool, args ...string) (map[string]*compiledPolicy, []string) {
	t.Helper()
	out, code := runShmguard(t, nil, append([]string{"policy", "export"}, args...)...)
	if code != 0 {
		t.Fatalf("shmguard policy export %s: exit %d", strings.Join(args, " "), code)
	}
	return compileExport(t, out, validateAll)
}

// compileExport compiles what `shmguard policy export` wrote, as exportedPolicies describes.
func compileExport(t testing.TB, out string, validateAll bool) (map[string]*compiledPolicy, []string) {
	t.Helper()
	policies := map[string]*compiledPolicy{}
	var names []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("shmguard policy export: %v", err)
		}
		switch head.Kind {
		case "MutatingAdmissionPolicy":
			var m admissionregistrationv1.MutatingAdmissionPolicy
			if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			p := compileAdmissionPolicy(t, m.Spec.Variables, m.Spec.MatchConditions)
			if len(m.Spec.Mutations) != 1 || m.Spec.Mutations[0].JSONPatch == nil {
				t.Fatalf("%s: want one JSON Patch mutation", m.Name)
			}
			p.mutation = p.compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.Spec.Mutations[0].JSONPatch.Expression},
				plugincel.OptionalVariableDeclarations{HasAuthorizer: true, HasPatchTypes: true}, environment.StoredExpressions)
			policies[m.Name], names = p, append(names, m.Name)
		case "ValidatingAdmissionPolicy":
			var v admissionregistrationv1.ValidatingAdmissionPolicy
			if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
				t.Fatal(err)
			}
			conditions := v.Spec.MatchConditions
			if validateAll {
				conditions = nil
			}
			p := compileAdmissionPolicy(t, v.Spec.Variables, conditions)
			for _, r := range v.Spec.MatchConstraints.ResourceRules {
				p.resize = p.resize || slices.Contains(r.Resources, "pods/resize")
			}
			accessors := make([]plugincel.ExpressionAccessor, len(v.Spec.Validations))
			for i, val := range v.Spec.Validations {
				accessors[i] = &validating.ValidationCondition{Expression: val.Expression, Message: val.Message}
			}
			p.validate = p.compiler.CompileCondition(accessors, plugincel.OptionalVariableDeclarations{HasAuthorizer: true},
				environment.StoredExpressions)
			policies[v.Name], names = p, append(names, v.Name)
		}
	}
	if len(names) != 5 {
		t.Fatalf("shmguard policy export wrote policies %v, want a mutating one and four validating ones", names)
	}
	return policies, names
}

// The exported policies' CEL, compiled and run by the API server's own admission CEL library
// (k8s.io/apiserver at the control plane's version, as its mutating and validating policy plugins
// compile and dispatch a policy), costs every pod of the test data and the corpus well within
// the API server's budgets: an evaluation past them fails, and failurePolicy Ignore would then
// admit the pod unpatched. The validating policies' validations are run on every pod, as if the
// mutating policy had not judged it ok: their worst case. The figures are in docs/policy-mode.md.
func TestPolicyModeStaysWithinCELsCostBudgets(t *testing.T) {
	policies, names := exportedPolicies(t, true)
	pods := everyPod(t)
	namespaces := []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"kubernetes.io/metadata.name": "plain"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "baseline", Labels: map[string]string{"kubernetes.io/metadata.name": "baseline",
			"pod-security.kubernetes.io/enforce": "baseline"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "enforced", Labels: map[string]string{"kubernetes.io/metadata.name": "enforced",
			"shmguard.io/enforce": "true"}}},
	}
	for _, name := range names {
		p := policies[name]
		var match, body []int64
		refused := 0
		for _, ns := range namespaces {
			for i, pod := range pods {
				c, err := p.cost(t, pod, ns)
				if errors.Is(err, errNotAPod) {
					refused++
					continue
				}
				if err != nil {
					t.Errorf("%s on pod %d (%s) in %s: %v", name, i, compact(pod["metadata"]), ns.Name, err)
					continue
				}
				match, body = append(match, c.match), append(body, c.body)
			}
		}
		sort.Slice(match, func(i, j int) bool { return match[i] < match[j] })
		sort.Slice(body, func(i, j int) bool { return body[i] < body[j] })
		if len(body) == 0 {
			continue
		}
		t.Logf("%s over %d pods × %d namespaces (%d of them refused by the API server's decoding): matchConditions median %d, max %d (budget %d); %s median %d, max %d (budget %d)",
			name, len(pods), len(namespaces), refused/len(namespaces), match[len(match)/2], match[len(match)-1], celconfig.RuntimeCELCostBudgetMatchConditions,
			map[bool]string{true: "mutation", false: "validations"}[p.mutation != nil], body[len(body)/2], body[len(body)-1],
			celconfig.RuntimeCELCostBudget)
		// Within a tenth of each budget: room for pods larger than any here.
		if match[len(match)-1] > celconfig.RuntimeCELCostBudgetMatchConditions/10 || body[len(body)-1] > celconfig.RuntimeCELCostBudget/10 {
			t.Errorf("%s costs up to %d (matchConditions) and %d: past a tenth of the API server's budgets", name,
				match[len(match)-1], body[len(body)-1])
		}
	}
}

// BenchmarkPolicyModeCEL times what the API server's admission CEL library spends on the
// exported policies for the pod bench/apiserver-latency.sh creates (an annotated 4-GPU pod in a
// plain namespace), in this process: the typed Pod made unstructured, each policy's
// matchConditions, and its mutation or validations with the variables they read. The
// validating policies are given the pod as the mutating one leaves it, judged ok: their
// matchConditions skip it, as they skip most pods.
//
//	go test -run '^$' -bench PolicyModeCEL ./   (in e2e/, with the control plane up)
func BenchmarkPolicyModeCEL(b *testing.B) {
	policies, names := exportedPolicies(b, false)
	// The pod as created, and as the mutating policy leaves it, judged ok.
	pod := controlplane.GPUPod("bench", 4, "96Gi")
	pod.Annotations = map[string]string{"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "64Mi"}
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		b.Fatal(err)
	}
	pod.Annotations["shmguard.io/plan"] = `{"gpus":4,"verdict":"ok"}`
	patched, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		b.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "latency",
		Labels: map[string]string{"kubernetes.io/metadata.name": "latency"}}}
	for _, name := range names {
		p, input := policies[name], object
		if p.mutation == nil {
			input = patched
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var c celCost
			for b.Loop() {
				if c, err = p.cost(b, input, ns); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.match+c.body), "cost-units/op")
		})
	}
}

// longLaunchPod is a pod the webhook denies (8 workers of 1Gi batches under an 8Gi limit), its
// args grown to `bytes` of launch line: policy mode reads the first 16 KiB of a launch line as
// the webhook does, so no length pushes a find() past CEL's per-call limit and no length makes
// the policies fail open (failurePolicy Ignore).
func longLaunchPod(bytes int) map[string]any {
	args := []any{"train.py"}
	for n := 8; n < bytes; n += 10 {
		args = append(args, "--x=12345")
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "long", "annotations": map[string]any{
			"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "1Gi"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "t", "command": []any{"torchrun", "--nproc_per_node=8"},
			"args": args, "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "8", "memory": "8Gi"}}}}}}
}

// A launch line of 800 KB — past where a find() over all of it exceeded CEL's per-call limit and
// the policies failed open — is read as the webhook reads it: the mutating policy still costs
// within its budgets, and the enforcing policy still denies the pod the webhook denies.
func TestPolicyModeBoundsWhatItSearchesOfALaunchLine(t *testing.T) {
	policies, _ := exportedPolicies(t, true)
	enforced := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "enforced",
		Labels: map[string]string{"kubernetes.io/metadata.name": "enforced", "shmguard.io/enforce": "true"}}}
	for _, bytes := range []int{1 << 10, 800 << 10} {
		pod := longLaunchPod(bytes)
		for name, p := range policies {
			c, err := p.cost(t, pod, enforced)
			if err != nil {
				t.Fatalf("%s on a %d-byte launch line: %v", name, bytes, err)
			}
			if c.body > celconfig.RuntimeCELCostBudget/10 {
				t.Errorf("%s on a %d-byte launch line costs %d", name, bytes, c.body)
			}
		}
		// The enforcing policy denies it, as the webhook does.
		v := policies["shmguard-enforce"]
		denied, err := v.denies(t, pod, enforced)
		if err != nil || !denied {
			t.Errorf("shmguard-enforce on a %d-byte launch line: denied %v (%v), want denied", bytes, denied, err)
		}
	}
	records := audit(t, mustJSON(t, longLaunchPod(800<<10)), "-")
	if len(records) != 1 || records[0].Verdict != "deny" {
		t.Errorf("the webhook's audit of the pod: %+v, want deny", records)
	}
}

// denies runs the validating policy's validations on pod and says whether one fails.
func (p *compiledPolicy) denies(t testing.TB, pod map[string]any, ns *corev1.Namespace) (bool, error) {
	t.Helper()
	var typed corev1.Pod
	raw, _ := json.Marshal(pod)
	if err := json.Unmarshal(raw, &typed); err != nil {
		return false, err
	}
	typed.APIVersion, typed.Kind = "v1", "Pod"
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&typed)
	if err != nil {
		return false, err
	}
	obj := &unstructured.Unstructured{Object: content}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	attr := admission.NewAttributesRecord(obj, nil, gvk, ns.Name, obj.GetName(), gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "e2e"})
	versioned := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(obj)}
	if p.resize { // a resize of the pod: the same pod before it, every part read on both sides
		old := obj.DeepCopy()
		attr = admission.NewAttributesRecord(obj, old, gvk, ns.Name, obj.GetName(), gvr, "resize", admission.Update,
			&metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "e2e"})
		versioned = &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk,
			VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(old)}
	}
	request := plugincel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	ctx := p.compiler.CreateContext(context.Background())
	results, _, err := p.validate.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, ns,
		celconfig.RuntimeCELCostBudget)
	if err != nil {
		return false, err
	}
	for _, r := range results {
		if r.Error != nil {
			return false, r.Error
		}
		if r.EvalResult.Value() != true {
			return true, nil
		}
	}
	return false, nil
}

// What an operator's policy file or flags put into the exported CEL is a value, never CEL: each
// hostile input below is either refused with the field named, or exported as policies the API
// server's own CEL library compiles and runs within its budgets, with the label or glob read as
// written.
func TestPolicyExportOfHostilePolicyFiles(t *testing.T) {
	dir := t.TempDir()
	many := "namespaces:\n"
	for i := 0; i < 249; i++ {
		many += fmt.Sprintf("  - {match: [\"team-%d-*\"], mode: %s}\n", i, []string{"warn", "enforce"}[i%2])
	}
	huge := "namespaces:\n  - match: ["
	for i := 0; i < 20000; i++ {
		huge += fmt.Sprintf("\"team-%d\", ", i)
	}
	huge += "\"x\"]\n"
	cases := []struct {
		name, policy string
		flags        []string
		refused      string // "" for exported
	}{
		{"a newline in a glob class", "namespaces:\n  - {match: [\"ml-[a\\nb]\"]}\n", nil, "printable ASCII"},
		{"a reversed range", "namespaces:\n  - {match: [\"team-[z-a]\"]}\n", nil, "reversed range"},
		{"an empty negated class", "namespaces:\n  - {match: [\"x-[!]\"]}\n", nil, "left open"},
		{"a class left open", "namespaces:\n  - {match: [\"ml-[[:alpha:]\"]}\n", nil, "left open"},
		{"an rdma glob RE2 refuses", "rdmaResources: [\"rdma/[z-a]\"]\n", nil, "reversed range"},
		{"a placeholder in a glob", "namespaces:\n  - {match: [\"team-[@gpus@]\"], mode: enforce}\n", nil, ""},
		{"a placeholder in a GPU resource", "gpuResources: [\"x@MPS@y\"]\n", nil, "is not a resource name"},
		{"an injected enforce label", "", []string{"--enforce-label", "x'].orValue('') == 'true' || true || ['"}, "is not a label key"},
		{"an injected Pod Security label", "", []string{"--pod-security-label", "a'] || true || ['"}, "is not a label key"},
		{"249 namespace rules", many, nil, ""},
		{"one rule of 20,000 globs", huge, nil, "split the rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"policy", "export"}, c.flags...)
			if c.policy != "" {
				file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
				if err := os.WriteFile(file, []byte(c.policy), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", file)
			}
			cmd := exec.Command(cp.Shmguard, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if c.refused != "" {
				if err == nil || !strings.Contains(stderr.String(), c.refused) {
					t.Fatalf("shmguard %s: %v, stderr %q; want it refused, saying %q", strings.Join(args, " "), err,
						stderr.String(), c.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("shmguard %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			out := stdout.String()
			policies, _ := compileExport(t, out, false)
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "t",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "4", "memory": "64Gi"}}}}}}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-7-a",
				Labels: map[string]string{"kubernetes.io/metadata.name": "team-7-a"}}}
			for name, p := range policies {
				if _, err := p.cost(t, pod, ns); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

// mustJSON is v as JSON.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
