package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Pods written for the parts of the Pod path the corpus seldom reaches: IPC_LOCK for RDMA as
// root and as non-root, init containers, a memory emptyDir too small or unmounted, processes
// and nodes from the launcher, NCCL's shm transport off, malformed annotations, a forged plan.
var policyModeEdgePods = []string{
	`{"metadata": {"annotations": {"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "64Mi"}}, "spec": {"containers": [{"name": "train", "image": "x", "command": ["torchrun", "--nproc_per_node", "4", "train.py"], "resources": {"limits": {"nvidia.com/gpu": "4", "memory": "96Gi"}}}]}}`,
	`{"spec": {"containers": [{"name": "train", "image": "x", "env": [{"name": "NCCL_IB_HCA", "value": "mlx5_0"}], "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "512Gi"}}}]}}`,
	`{"spec": {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2", "rdma/hca": "1", "memory": "64Gi"}}}]}}`,
	`{"spec": {"containers": [{"name": "train", "image": "x", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}, "env": [{"name": "FI_PROVIDER", "value": "EFA"}, {"name": "PET_NNODES", "value": "1:4"}], "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}`,
	`{"spec": {"initContainers": [{"name": "warm", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "1Gi"}}}, {"name": "fetch", "image": "x"}], "containers": [{"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "32Gi"}}}, {"name": "side", "image": "x", "resources": {"limits": {"memory": "1Gi"}}}]}}`,
	`{"spec": {"containers": [{"name": "train", "image": "x", "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm/"}], "resources": {"limits": {"nvidia.com/gpu": "4", "memory": "64Gi"}}}], "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}]}}`,
	`{"spec": {"containers": [{"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "64Gi"}}}], "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}`,
	`{"spec": {"containers": [{"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}], "volumes": [{"name": "dshm", "emptyDir": {}}]}}`,
	`{"spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "PET_NPROC_PER_NODE", "value": "gpu"}, {"name": "NCCL_SHM_DISABLE", "value": "1"}], "resources": {"limits": {"amd.com/gpu": "4", "memory": "40Gi"}}}]}}`,
	`{"metadata": {"annotations": {"shmguard.io/num-workers": "4", "shmguard.io/batch-bytes": "1Pi"}}, "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "8Gi"}}}]}}`,
	`{"metadata": {"annotations": {"shmguard.io/num-workers": "lots"}}, "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}`,
	`{"metadata": {"annotations": {"shmguard.io/ignore": "shm-below-need"}}, "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}`,
	// A plan annotation written to pass for the mutating policy's verdict: it overwrites it.
	`{"metadata": {"annotations": {"shmguard.io/num-workers": "lots", "shmguard.io/plan": "{\"verdict\":\"ok\"}"}}, "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}`,
	`{"spec": {"hostIPC": true, "containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}`,
	`{"spec": {"containers": [{"name": "a", "image": "x", "command": ["sh", "-c", "torchrun --nnodes=2 --nproc-per-node=8 train.py"], "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "1Ti"}}}], "volumes": [{"name": "dshm", "configMap": {"name": "x"}}]}}`,
}

// What the webhook may do that the policies cannot, as docs/policy-mode.md lists them, each
// recognised in the webhook's plan annotation.
var policyModeDifferences = []struct {
	name string
	in   *regexp.Regexp
}{
	{"an inference server sized from its launch", regexp.MustCompile(`"server":"`)},
	{"a size learned from a ShmProfile", regexp.MustCompile(`"observed":`)},
}

// applyPolicyMode exports the policies from the policy file the webhook reads, with its own name
// and the label `shmguard.io/policy-mode` to leave a namespace alone, creates them, and removes
// them when t ends. `mode` is policy export's --mode: policy (10 objects) or hybrid (2).
func applyPolicyMode(t *testing.T, name, config, enabledLabel, mode string) {
	t.Helper()
	out, code := runShmguard(t, nil, "policy", "export", "--config", config, "--name", name,
		"--enabled-label", enabledLabel, "--mode", mode)
	if code != 0 {
		t.Fatalf("shmguard policy export: exit %d\n%s", code, out)
	}
	objects := parseObjects(t, []byte(out))
	if want := map[string]int{"policy": 10, "hybrid": 2}[mode]; len(objects) != want {
		t.Fatalf("shmguard policy export --mode %s wrote %d objects, want %d", mode, len(objects), want)
	}
	for _, u := range objects {
		if _, _, err := createObject(t, "", u, false); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// sortVolumes orders a pod's volumes and each container's mounts by name: the API server's own
// service account volume goes after the ones a pod arrives with, before those admission adds.
func sortVolumes(o map[string]any) {
	byName := func(list []any, key string) {
		sort.SliceStable(list, func(i, j int) bool {
			a, _ := list[i].(map[string]any)[key].(string)
			b, _ := list[j].(map[string]any)[key].(string)
			return a < b
		})
	}
	spec, _ := o["spec"].(map[string]any)
	if v, ok := spec["volumes"].([]any); ok {
		byName(v, "name")
	}
	for _, field := range []string{"containers", "initContainers"} {
		cs, _ := spec[field].([]any)
		for _, c := range cs {
			if m, ok := c.(map[string]any)["volumeMounts"].([]any); ok {
				byName(m, "mountPath")
			}
		}
	}
}

// normalised is a created Pod as the comparison reads it: without what each creation makes its
// own (uid, time, namespace, the service account token's random volume name) and without the
// plan annotation, which the two modes write differently; "" annotations left are dropped.
func normalised(u *unstructured.Unstructured) (string, string) {
	o := u.DeepCopy().Object
	for _, f := range []string{"uid", "creationTimestamp", "namespace", "resourceVersion", "generation", "managedFields"} {
		unstructured.RemoveNestedField(o, "metadata", f)
	}
	plan, _, _ := unstructured.NestedString(o, "metadata", "annotations", "shmguard.io/plan")
	unstructured.RemoveNestedField(o, "metadata", "annotations", "shmguard.io/plan")
	if a, ok, _ := unstructured.NestedMap(o, "metadata", "annotations"); ok && len(a) == 0 {
		unstructured.RemoveNestedField(o, "metadata", "annotations")
	}
	text, _ := json.Marshal(o)
	return regexp.MustCompile(`kube-api-access-[a-z0-9]+`).ReplaceAllString(string(text), "kube-api-access"), plan
}

// Every Pod of the examples, of the project's and the e2e's test data and of the corpus (and every
// pod template there, as its controller would create it) is created through the API server twice:
// in a namespace the webhook serves, and in one only the exported policies reach. The two pods must
// be equal, the plan annotation aside, except where the webhook's plan shows one of the
// differences docs/policy-mode.md lists.
func TestPolicyModeGivesTheWebhooksAnswers(t *testing.T) {
	applyPolicyMode(t, "e2e-policy-mode", cp.ShmguardPolicy(), "shmguard.io/policy-mode", "policy")
	edges := edgePodsOf(t)
	pods := append(append([]map[string]any{}, edges...), everyPod(t)...)
	cases := []struct {
		name   string
		labels map[string]string
		pods   []map[string]any
	}{
		{"every pod, warn", nil, pods},
		// The edge pods where the namespace's Pod Security level bars hostIPC and IPC_LOCK, and
		// where the namespace is labelled for enforcement.
		{"edge pods, baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}, edges},
		{"edge pods, enforced", map[string]string{"shmguard.io/enforce": "true"}, edges},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			webhook := map[string]string{"shmguard.io/policy-mode": "false"}
			policy := map[string]string{"shmguard.io/enabled": "false"}
			neither := map[string]string{"shmguard.io/enabled": "false", "shmguard.io/policy-mode": "false"}
			for k, v := range c.labels {
				webhook[k], policy[k], neither[k] = v, v, v
			}
			comparePolicyMode(t, c.pods, newNamespaceNamed(t, "webhook", webhook), newNamespaceNamed(t, "policy", policy),
				newNamespaceNamed(t, "neither", neither), c.labels["pod-security.kubernetes.io/enforce"])
		})
	}
}

// everyPod is every Pod of the examples, the e2e's test data, the DataLoader measurements and the
// corpus, and every pod template there made into a Pod.
func everyPod(t *testing.T) []map[string]any {
	var pods []map[string]any
	dirs := []string{filepath.Join(repoRoot, "examples"), filepath.Join(repoRoot, "e2e", "testdata"),
		filepath.Join(repoRoot, "tests", "testdata", "shm-truth")}
	if haveCorpus(t, "the corpus's pods") {
		dirs = append(dirs, corpusDir())
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, o := range manifestsUnder(t, d) {
			podsOf(o, &pods)
		}
	}
	return pods
}

// edgePodsOf is policyModeEdgePods as Pods.
func edgePodsOf(t *testing.T) []map[string]any {
	var edges []map[string]any
	for _, e := range policyModeEdgePods {
		var p map[string]any
		if err := json.Unmarshal([]byte(e), &p); err != nil {
			t.Fatal(err)
		}
		p["apiVersion"], p["kind"] = "v1", "Pod"
		edges = append(edges, p)
	}
	return edges
}

// waitForPolicies waits until the policies reach `ns`: the API server picks up new policies
// within a second or so.
func waitForPolicies(t *testing.T, ns string, pod map[string]any) {
	probe := (&unstructured.Unstructured{Object: pod}).DeepCopy()
	probe.SetName("probe")
	eventually(t, 30*time.Second, "the exported policies in force", func() error {
		stored, _, err := createObject(t, ns, probe, true)
		if err != nil {
			return err
		}
		if plan := stored.GetAnnotations()["shmguard.io/plan"]; !strings.Contains(plan, `"policyMode":true`) {
			return fmt.Errorf("plan annotation %q", plan)
		}
		return nil
	})
}

// preparedPods names each pod pm-N and drops the references to objects this cluster lacks, which
// make the API server's own admission plugins (ServiceAccount, RuntimeClass, Priority) refuse it
// before any policy or webhook; shmguard reads none of them.
func preparedPods(pods []map[string]any) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i, p := range pods {
		u := (&unstructured.Unstructured{Object: p}).DeepCopy()
		u.SetName(fmt.Sprintf("pm-%d", i))
		u.SetNamespace("")
		for _, f := range []string{"serviceAccountName", "serviceAccount", "runtimeClassName", "priorityClassName", "priority"} {
			unstructured.RemoveNestedField(u.Object, "spec", f)
		}
		out = append(out, u)
	}
	return out
}

// auditedPods is `shmguard audit --policy-mode -o patched --config config` of the pods, item by
// item.
func auditedPods(t *testing.T, pods []*unstructured.Unstructured, config string) []any {
	var items []any
	for _, u := range pods {
		items = append(items, u.Object)
	}
	list, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	out, _ := runShmguard(t, list, "audit", "--policy-mode", "-o", "patched", "--config", config, "-")
	docs := parseObjects(t, []byte(out))
	audited, _, _ := unstructured.NestedSlice(docs[0].Object, "items")
	if len(audited) != len(pods) {
		t.Fatalf("audit --policy-mode -o patched gave %d items for %d pods", len(audited), len(pods))
	}
	return audited
}

// auditAgrees creates the pod as the audit patched it in `neither` and says whether it equals
// the one the policies made (volumes and mounts in name order), reporting where not.
func auditAgrees(t *testing.T, i int, audited any, byPolicy *unstructured.Unstructured, neither string) bool {
	byAudit, _, err := createObject(t, neither, &unstructured.Unstructured{Object: audited.(map[string]any)}, true)
	if err != nil {
		t.Errorf("pod %d as audit --policy-mode patched it: %v", i, statusMessage(err))
		return false
	}
	c, b := normalisedSorted(byAudit), normalisedSorted(byPolicy)
	if c == b {
		return true
	}
	var x, y map[string]any
	_ = json.Unmarshal([]byte(b), &x)
	_ = json.Unmarshal([]byte(c), &y)
	t.Errorf("pod %d: audit --policy-mode differs from the policies:\npolicy: %v\naudit:  %v", i, missingFrom(x, y, ""),
		missingFrom(y, x, ""))
	return false
}

// comparePolicyMode creates each pod (dry run) in the webhook's namespace and in the policies';
// and, patched by `shmguard audit --policy-mode -o patched`, in a namespace neither reaches:
// the audit must say what the policies do. `level`: the namespaces' Pod Security level.
func comparePolicyMode(t *testing.T, pods []map[string]any, webhook, policy, neither, level string) {
	waitForPolicies(t, policy, pods[0])
	prepared := preparedPods(pods)
	// The audit reads the namespace's Pod Security level from a policy rule.
	config := cp.ShmguardPolicy()
	if level != "" {
		text, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		config = filepath.Join(t.TempDir(), "policy.yaml")
		var doc map[string]any
		if err := yaml.Unmarshal(text, &doc); err != nil {
			t.Fatal(err)
		}
		rules, _ := doc["namespaces"].([]any)
		for _, r := range rules {
			r.(map[string]any)["podSecurity"] = level
		}
		if text, err = yaml.Marshal(doc); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(config, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	audited := auditedPods(t, prepared, config)

	equal, refused, explained, agreed := 0, 0, map[string]int{}, 0
	for i, u := range prepared {
		p := u.Object
		byWebhook, _, errWebhook := createObject(t, webhook, u, true)
		byPolicy, _, errPolicy := createObject(t, policy, u, true)
		if errWebhook != nil || errPolicy != nil {
			if (errWebhook == nil) != (errPolicy == nil) {
				t.Errorf("pod %d: the webhook's namespace says %v, the policies' %v\n%s", i, errWebhook, errPolicy, compact(p))
			}
			refused++
			continue
		}
		a, plan := normalised(byWebhook)
		b, _ := normalised(byPolicy)
		if auditAgrees(t, i, audited[i], byPolicy, neither) {
			agreed++
		}
		if a == b {
			equal++
			continue
		}
		listed := ""
		for _, d := range policyModeDifferences {
			if d.in.MatchString(plan) {
				listed = d.name
			}
		}
		if listed == "" {
			var x, y map[string]any
			_ = json.Unmarshal([]byte(a), &x)
			_ = json.Unmarshal([]byte(b), &y)
			t.Errorf("pod %d differs in no listed way (webhook plan %s):\nwebhook: %v\npolicy:  %v\nfrom: %s",
				i, plan, missingFrom(x, y, ""), missingFrom(y, x, ""), compact(p))
			continue
		}
		explained[listed]++
	}
	t.Logf("%d pods: %d equal, %d refused by both, differing as listed: %v; audit --policy-mode agrees with the policies on %d",
		len(pods), equal, refused, explained, agreed)
	if equal < len(pods)/2 {
		t.Errorf("only %d of %d pods were equal", equal, len(pods))
	}
	if len(pods) != equal+refused+sum(explained) {
		t.Errorf("%d pods, %d accounted for", len(pods), equal+refused+sum(explained))
	}
}

// A policy file unlike the webhook's (IPC_LOCK to every GPU container, hostIPC, the floor for
// unannotated pods, every init container mounted, MPS resources, other sizing constants): the
// policies exported from it make every pod what `audit --policy-mode` with it says.
func TestPolicyModeAgreesWithTheAuditUnderAnotherPolicy(t *testing.T) {
	config := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(config, []byte(`ipcLock: always
hostIPC: always
initContainerMounts: all
mpsResources: [nvidia.com/gpu.shared]
maxFractionOfMemoryLimit: 0.75
sizing: {safety: 1.5, base: 128Mi, multiGpuFloor: 2Gi}
unannotated: {mode: floor, minimum: 512Mi}
namespaces:
  - {match: ["kube-*"], mode: "off"}
  - {match: ["*"], mode: warn}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	applyPolicyMode(t, "e2e-policy-mode-other", config, "shmguard.io/policy-mode-other", "policy")
	// Neither the webhook nor the other test's policies reach these namespaces.
	policy := newNamespaceNamed(t, "policy", map[string]string{"shmguard.io/enabled": "false", "shmguard.io/policy-mode": "false"})
	neither := newNamespaceNamed(t, "neither", map[string]string{"shmguard.io/enabled": "false",
		"shmguard.io/policy-mode": "false", "shmguard.io/policy-mode-other": "false"})
	pods := append(edgePodsOf(t), everyPod(t)...)
	waitForPolicies(t, policy, pods[0])
	prepared := preparedPods(pods)
	audited := auditedPods(t, prepared, config)
	agreed, refused, hostIPC, locked := 0, 0, 0, 0
	for i, u := range prepared {
		byPolicy, _, err := createObject(t, policy, u, true)
		if err != nil {
			refused++ // invalid as published; the first test checks that the webhook refuses these too
			continue
		}
		if auditAgrees(t, i, audited[i], byPolicy, neither) {
			agreed++
		}
		if h, _, _ := unstructured.NestedBool(byPolicy.Object, "spec", "hostIPC"); h {
			if was, _, _ := unstructured.NestedBool(u.Object, "spec", "hostIPC"); !was {
				hostIPC++
			}
		}
		after, _ := json.Marshal(byPolicy.Object["spec"])
		before, _ := json.Marshal(u.Object["spec"])
		if strings.Contains(string(after), `"IPC_LOCK"`) && !strings.Contains(string(before), `"IPC_LOCK"`) {
			locked++
		}
	}
	t.Logf("%d pods: audit --policy-mode agrees with the policies on %d, %d refused; the policies set hostIPC on %d and "+
		"added IPC_LOCK to %d", len(pods), agreed, refused, hostIPC, locked)
	if hostIPC == 0 || locked == 0 {
		t.Errorf("under hostIPC: always and ipcLock: always, the policies set hostIPC on %d pods and IPC_LOCK on %d", hostIPC, locked)
	}
	if agreed < len(pods)/2 {
		t.Errorf("only %d of %d pods were compared", agreed, len(pods))
	}
}

// normalisedSorted is normalised with volumes and mounts in name order.
func normalisedSorted(u *unstructured.Unstructured) string {
	c := u.DeepCopy()
	sortVolumes(c.Object)
	text, _ := normalised(c)
	return text
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
