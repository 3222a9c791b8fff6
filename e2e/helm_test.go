package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

func chartDir() string { return filepath.Join(repoRoot, "charts", "shmguard") }

func TestHelmLintStrict(t *testing.T) {
	out, err := cp.Run(nil, "helm", "lint", "--strict", chartDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// helmBookkeeping are the labels Helm's charts carry and plain manifests do not.
var helmBookkeeping = []string{"helm.sh/chart", "app.kubernetes.io/managed-by"}

// objectsByKey reads documents as objects keyed by "Kind/name", without the labels drop names;
// a policy file in a ConfigMap is read as YAML, so comments and layout do not count.
func objectsByKey(t *testing.T, docs [][]byte, drop []string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, d := range docs {
		var o map[string]any
		if err := yaml.Unmarshal(d, &o); err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: o}
		labels := u.GetLabels()
		for _, l := range drop {
			delete(labels, l)
		}
		if len(labels) == 0 {
			unstructured.RemoveNestedField(o, "metadata", "labels")
		} else {
			u.SetLabels(labels)
		}
		if u.GetKind() == "ConfigMap" {
			data, _ := o["data"].(map[string]any)
			for k, v := range data {
				if text, ok := v.(string); ok && strings.HasSuffix(k, ".yaml") {
					var parsed any
					if err := yaml.Unmarshal([]byte(text), &parsed); err != nil {
						t.Fatalf("%s data %s: %v", u.GetName(), k, err)
					}
					data[k] = parsed
				}
			}
		}
		out[u.GetKind()+"/"+u.GetName()] = o
	}
	return out
}

// namespaced reports whether the API server keeps o's kind in a namespace. A kind it does not
// serve (cert-manager's Certificate: no cert-manager here) is taken as namespaced, as every
// such kind the chart renders is.
func namespaced(t *testing.T, o *unstructured.Unstructured) bool {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return true
	}
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

func TestHelmTemplateEqualsDeploy(t *testing.T) {
	docs, err := cp.RenderChart()
	if err != nil {
		t.Fatal(err)
	}
	rendered := objectsByKey(t, docs, helmBookkeeping)
	for _, o := range rendered {
		u := unstructured.Unstructured{Object: o}
		// Helm puts namespaced objects in the release's namespace (-n); deploy/ names it.
		if u.GetNamespace() == "" && namespaced(t, &u) {
			u.SetNamespace(controlplane.ReleaseNamespace)
		}
		// The chart rolls its pods when the policy changes (a Helm idiom, computed at render).
		unstructured.RemoveNestedField(o, "spec", "template", "metadata", "annotations", "checksum/policy")
		if a, _, _ := unstructured.NestedMap(o, "spec", "template", "metadata", "annotations"); len(a) == 0 {
			unstructured.RemoveNestedField(o, "spec", "template", "metadata", "annotations")
		}
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot, "deploy", "*.yaml"))
	var deployDocs [][]byte
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := controlplane.SplitYAML(text)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		deployDocs = append(deployDocs, d...)
	}
	plain := objectsByKey(t, deployDocs, nil)
	delete(plain, "Namespace/"+controlplane.ReleaseNamespace) // helm install --create-namespace makes it
	keys := func(m map[string]map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		sort.Strings(k)
		return k
	}
	if a, b := keys(rendered), keys(plain); strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("helm template renders %v, deploy/ holds %v", a, b)
	}
	for key, want := range rendered {
		got := plain[key]
		if diff := append(missingFrom(want, got, key), missingFrom(got, want, key)...); len(diff) > 0 {
			t.Errorf("helm template and deploy/ differ:\n  %s", strings.Join(diff, "\n  "))
		}
	}
}

func TestHelmValuesSchemaRefusesBadValues(t *testing.T) {
	cases := []struct{ set, complaint string }{
		{"webhook.scope=everywhere", "webhook.scope"},
		{"replicaCount=-1", "replicaCount"},
		{"policy.hostIPC=sometimes", "hostIPC"},
		{"server.logFormat=xml", "logFormat"},
		{"policy.maxFractionOfMemoryLimit=2", "maxFractionOfMemoryLimit"},
		{"webhook.mutating.failurePolicy=Maybe", "failurePolicy"},
		// kube-apiserver keeps an idle connection 90 s: the webhook must not close it first.
		{"server.keepAliveSeconds=10", "keepAliveSeconds"},
		{"agent.leakedSegments=sometimes", "leakedSegments"},
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			out, err := cp.Run(nil, "helm", "template", "x", chartDir(), "--set", c.set)
			if err == nil {
				t.Fatalf("helm template --set %s rendered:\n%.300s", c.set, out)
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") ||
				!strings.Contains(err.Error(), c.complaint) {
				t.Errorf("helm refused --set %s, but not for its schema naming %s: %v", c.set, c.complaint, err)
			}
		})
	}
}

// The agent's leaked-segments modes as the chart renders them: only exact (and chart 0.1.0's
// true, read as exact) takes the host's PID namespace and the two capabilities; deleting needs
// exact, and the chart says so instead of rendering an agent that cannot.
func TestHelmAgentPrivilegesFollowTheLeakMode(t *testing.T) {
	cases := []struct {
		sets       []string
		mode       string
		privileged bool
		refused    string
	}{
		{nil, "status", false, ""},
		{[]string{"agent.leakedSegments=exact"}, "exact", true, ""},
		{[]string{"agent.leakedSegments=true"}, "exact", true, ""},
		{[]string{"agent.leakedSegments=false"}, "off", false, ""},
		{[]string{"agent.leakedSegments=exact", "agent.reclaimLeakedSegments=true"}, "exact", true, ""},
		{[]string{"agent.reclaimLeakedSegments=true"}, "", false, "agent.reclaimLeakedSegments needs agent.leakedSegments: exact"},
	}
	for _, c := range cases {
		t.Run(strings.Join(append([]string{"default"}, c.sets...), ","), func(t *testing.T) {
			docs, err := cp.RenderChart(c.sets...)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("rendered, or refused without saying %q: %v", c.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ds appsv1.DaemonSet
			for _, doc := range docs {
				if strings.Contains(string(doc), "\nkind: DaemonSet\n") {
					if err := yaml.Unmarshal(doc, &ds); err != nil {
						t.Fatal(err)
					}
				}
			}
			spec := ds.Spec.Template.Spec
			if len(spec.Containers) == 0 {
				t.Fatal("no agent DaemonSet rendered")
			}
			c0 := spec.Containers[0]
			added := c0.SecurityContext.Capabilities.Add
			if spec.HostPID != c.privileged || (len(added) > 0) != c.privileged ||
				!strings.Contains(strings.Join(c0.Args, " "), "--leaked-segments="+c.mode) {
				t.Errorf("hostPID %v, capabilities added %v, args %v: want mode %s, privileged %v", spec.HostPID, added,
					c0.Args, c.mode, c.privileged)
			}
		})
	}
}

func TestHelmInstallAndUninstall(t *testing.T) {
	const release, ns = "shmguard-e2e", "shmguard-helm-e2e"
	ca, err := os.ReadFile(cp.WebhookCA())
	if err != nil {
		t.Fatal(err)
	}
	// Without cert-manager in this control plane: the CA bundle and Secret name as the README's
	// install without cert-manager gives them.
	args := []string{"install", release, chartDir(), "-n", ns, "--create-namespace",
		"--set", "certManager.enabled=false", "--set", "tls.secretName=shmguard-tls",
		"--set", "tls.caBundle=" + base64.StdEncoding.EncodeToString(ca)}
	if out, err := cp.Run(nil, "helm", args...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = cp.Run(nil, "helm", "uninstall", release, "-n", ns)
		}
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	selector := "app.kubernetes.io/instance=" + release
	installed := releaseObjects(t, ns, selector)
	for _, kind := range []string{"Deployment", "Service", "ConfigMap", "ServiceAccount", "PodDisruptionBudget",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if !strings.Contains(strings.Join(installed, " "), kind+"/") {
			t.Errorf("helm install made no %s (made %v)", kind, installed)
		}
	}
	if out, err := cp.Run(nil, "helm", "uninstall", release, "-n", ns, "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	// The Deployment's ReplicaSet and pods go with it (kube-controller-manager's garbage
	// collector): nothing of the release stays.
	eventually(t, 60*time.Second, "nothing of the release left", func() error {
		if left := releaseObjects(t, ns, selector); len(left) > 0 {
			return fmt.Errorf("left behind: %v", left)
		}
		return nil
	})
}

// releaseObjects lists the objects labelled with selector in ns and cluster-wide, as "Kind/name".
func releaseObjects(t *testing.T, ns, selector string) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(mustRestConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		gvr        schema.GroupVersionResource
		namespaced bool
	}{
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true},
		{schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, true},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, false},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, false},
	}
	var out []string
	for _, k := range kinds {
		var ri dynamic.ResourceInterface = dyn.Resource(k.gvr)
		if k.namespaced {
			ri = dyn.Resource(k.gvr).Namespace(ns)
		}
		list, err := ri.List(ctxFor(t), metav1.ListOptions{LabelSelector: selector})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out = append(out, o.GetKind()+"/"+o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// The webhook.scope=labelled rendering, registered, reaches only namespaces labelled
// shmguard.io/enabled=true.
func TestHelmLabelledScope(t *testing.T) {
	ctx := ctxFor(t)
	if err := cp.RegisterWebhooks(ctx, "webhook.scope=labelled"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.RegisterWebhooks(context.Background()); err != nil {
			t.Errorf("restoring the default webhooks: %v", err)
		}
	})
	labelled := newNamespace(t, map[string]string{"shmguard.io/enabled": "true"})
	plain := newNamespace(t, nil)
	eventually(t, 20*time.Second, "the labelled scope in force", func() error {
		inLabelled, err := dryRunPod(ctx, labelled)
		if err != nil {
			return err
		}
		inPlain, err := dryRunPod(ctx, plain)
		if err != nil {
			return err
		}
		if !inLabelled || inPlain {
			return fmt.Errorf("patched in the labelled namespace: %v, in the unlabelled one: %v", inLabelled, inPlain)
		}
		return nil
	})
}

// webhook.clientAuth renders mutual TLS: the Deployment's --client-ca-file and --client-cn, the
// CA's Secret mounted, and — with cert-manager and no Secret named — the CA and the API
// server's client certificate; without either, helm refuses with the reason.
func TestHelmClientAuth(t *testing.T) {
	docs, err := cp.RenderChart("webhook.clientAuth.enabled=true", "webhook.clientAuth.allowedNames={kube-apiserver,apiserver-loopback}")
	if err != nil {
		t.Fatal(err)
	}
	objects := objectsByKey(t, docs, nil)
	deployment := &unstructured.Unstructured{Object: objects["Deployment/shmguard"]}
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	args := fmt.Sprint(containers[0].(map[string]any)["args"])
	for _, want := range []string{"--client-ca-file=/etc/shmguard/client-ca/ca.crt", "--client-cn=kube-apiserver",
		"--client-cn=apiserver-loopback", "--tls-min-version=VersionTLS13"} {
		if !strings.Contains(args, want) {
			t.Errorf("the Deployment's args lack %s: %s", want, args)
		}
	}
	if !strings.Contains(jsonText(deployment.Object), `"secretName":"shmguard-apiserver-client"`) {
		t.Error("the client CA's Secret is not mounted")
	}
	for _, key := range []string{"Certificate/shmguard-client-ca", "Issuer/shmguard-client-ca", "Certificate/shmguard-apiserver-client"} {
		if objects[key] == nil {
			t.Errorf("no %s rendered", key)
		}
	}
	_, err = cp.RenderChart("webhook.clientAuth.enabled=true", "certManager.enabled=false", "tls.caBundle=eA==")
	if err == nil || !strings.Contains(err.Error(), "webhook.clientAuth.enabled needs webhook.clientAuth.caSecretName") {
		t.Errorf("helm rendered clientAuth with no CA to mount: %v", err)
	}
}

// The monitoring the chart offers: the dashboard's ConfigMap carries the JSON file as it is,
// with the sidecar's label, and the agents get a PodMonitor that keeps their pod labels.
func TestHelmMonitoring(t *testing.T) {
	docs, err := cp.RenderChart("grafana.dashboard.enabled=true", "serviceMonitor.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	objects := objectsByKey(t, docs, nil)
	cm := objects["ConfigMap/shmguard-dashboard"]
	if cm == nil {
		t.Fatal("no ConfigMap/shmguard-dashboard rendered")
	}
	if v, _, _ := unstructured.NestedString(cm, "metadata", "labels", "grafana_dashboard"); v != "1" {
		t.Errorf("the dashboard's ConfigMap lacks the sidecar's label grafana_dashboard=1: %v", cm["metadata"])
	}
	text, _, _ := unstructured.NestedString(cm, "data", "shmguard.json")
	file, err := os.ReadFile(filepath.Join(chartDir(), "dashboards", "shmguard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rendered, want any
	if err := json.Unmarshal([]byte(text), &rendered); err != nil {
		t.Fatalf("the dashboard in the ConfigMap is not JSON: %v", err)
	}
	if err := json.Unmarshal(file, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rendered, want) {
		t.Error("the dashboard in the ConfigMap differs from dashboards/shmguard.json")
	}
	pm := objects["PodMonitor/shmguard-agent"]
	endpoints, _, _ := unstructured.NestedSlice(pm, "spec", "podMetricsEndpoints")
	if pm == nil || len(endpoints) != 1 || endpoints[0].(map[string]any)["honorLabels"] != true ||
		endpoints[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("the agents' PodMonitor: %v", pm)
	}
	if objects["ServiceMonitor/shmguard"] == nil {
		t.Error("no ServiceMonitor/shmguard rendered")
	}

	// The alerts find the targets by the job labels the Prometheus Operator gives the monitors'
	// targets: the Service's name, and the PodMonitor's namespace/name.
	docs, err = cp.RenderChart("serviceMonitor.enabled=true", "prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	objects = objectsByKey(t, docs, nil)
	rule := objects["PrometheusRule/shmguard"]
	if rule == nil {
		t.Fatal("no PrometheusRule/shmguard rendered")
	}
	pm = objects["PodMonitor/shmguard-agent"]
	pmNamespace, _, _ := unstructured.NestedString(pm, "metadata", "namespace")
	jobs := map[string]bool{}
	groups, _, _ := unstructured.NestedSlice(rule, "spec", "groups")
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			for _, m := range regexp.MustCompile(`job="([^"]+)"`).FindAllStringSubmatch(r.(map[string]any)["expr"].(string), -1) {
				jobs[m[1]] = true
			}
		}
	}
	for _, want := range []string{"shmguard", pmNamespace + "/shmguard-agent", "apiserver"} {
		if !jobs[want] {
			t.Errorf("the alerts never select job %q; they select %v", want, jobs)
		}
	}
	if len(jobs) != 3 {
		t.Errorf("the alerts select jobs %v, want the webhook's, the agents' and the API server's", jobs)
	}
}

// mode: policy. The chart's exported policies are what `shmguard policy export` writes for its
// default policy; it renders them with no Deployment, Service, certificate or webhook
// configuration, refuses another policy unless policyMode.objects carries its export, and,
// installed, its policies patch a GPU pod in a namespace the webhooks do not reach.
func TestHelmPolicyMode(t *testing.T) {
	check := exec.Command(filepath.Join(repoRoot, "scripts", "export-chart-policies.sh"), "--check")
	check.Env = append(os.Environ(), "SHMGUARD_BINARY="+cp.Shmguard)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("scripts/export-chart-policies.sh --check: %v\n%s", err, out)
	}

	const release, ns = "shmguard-pm", "shmguard-pm-e2e"
	// The policies leave namespaces labelled shmguard.io/policy-mode=false alone; the webhook the
	// control plane registered leaves those labelled shmguard.io/enabled=false.
	args := []string{"--set", "mode=policy", "--set", "webhook.enabledLabel=shmguard.io/policy-mode", "--set", "agent.enabled=false"}
	rendered, err := cp.Run(nil, "helm", append([]string{"template", release, chartDir(), "-n", ns}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, u := range parseObjects(t, rendered) {
		kinds[u.GetKind()]++
	}
	want := map[string]int{"MutatingAdmissionPolicy": 1, "MutatingAdmissionPolicyBinding": 1,
		"ValidatingAdmissionPolicy": 4, "ValidatingAdmissionPolicyBinding": 4}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("helm template --set mode=policy (agent off) rendered %v, want %v", kinds, want)
	}
	// Hybrid: the webhook's objects and the mutating policy, its floor; no validating policy.
	rendered, err = cp.Run(nil, "helm", "template", release, chartDir(), "-n", ns, "--set", "mode=hybrid", "--set", "agent.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	hybrid := map[string]int{}
	for _, u := range parseObjects(t, rendered) {
		hybrid[u.GetKind()]++
	}
	if hybrid["Deployment"] != 1 || hybrid["MutatingWebhookConfiguration"] != 1 || hybrid["ValidatingWebhookConfiguration"] != 1 ||
		hybrid["MutatingAdmissionPolicy"] != 1 || hybrid["MutatingAdmissionPolicyBinding"] != 1 ||
		hybrid["ValidatingAdmissionPolicy"] != 0 {
		t.Errorf("helm template --set mode=hybrid rendered %v", hybrid)
	}
	if _, err := cp.Run(nil, "helm", "template", release, chartDir(), "--set", "mode=policy", "--set", "policy.unannotated.mode=floor"); err == nil ||
		!strings.Contains(err.Error(), "policyMode.objects") {
		t.Errorf("helm template of policy mode with another policy and no policyMode.objects: %v", err)
	}
	objects, _ := runShmguard(t, nil, "policy", "export")
	if _, err := cp.Run(nil, "helm", "template", release, chartDir(), "--set", "mode=policy",
		"--set", "policy.unannotated.mode=floor", "--set-string", "policyMode.objects="+strings.ReplaceAll(objects, ",", "\\,")); err != nil {
		t.Errorf("helm template of policy mode with another policy and its export: %v", err)
	}

	if out, err := cp.Run(nil, "helm", append([]string{"install", release, chartDir(), "-n", ns, "--create-namespace"}, args...)...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	target := newNamespace(t, map[string]string{"shmguard.io/enabled": "false"})
	pod := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu"}, "spec": {"containers": [
		{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "4", "memory": "64Gi"}}}]}}`), &pod.Object); err != nil {
		t.Fatal(err)
	}
	// The policies reach every namespace not labelled shmguard.io/policy-mode=false: uninstalled,
	// they stay in force until the API server's policy informers drop them, and the next test's
	// pods must not meet them.
	t.Cleanup(func() {
		_, _ = cp.Run(nil, "helm", "uninstall", release, "-n", ns)
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		eventually(t, 60*time.Second, "the chart's policies no longer in force", func() error {
			stored, _, err := createObject(t, target, pod, true)
			if err != nil {
				return err
			}
			if plan := stored.GetAnnotations()["shmguard.io/plan"]; plan != "" {
				return fmt.Errorf("a pod is still given the plan %q", plan)
			}
			return nil
		})
	})
	eventually(t, 30*time.Second, "the chart's policies in force", func() error {
		stored, _, err := createObject(t, target, pod, true)
		if err != nil {
			return err
		}
		if shm := readShmOf(stored); shm != "16Gi" {
			return fmt.Errorf("/dev/shm %q, plan %q", shm, stored.GetAnnotations()["shmguard.io/plan"])
		}
		return nil
	})
}

// readShmOf is the sizeLimit of a stored pod's volume named dshm, "" without one.
func readShmOf(u *unstructured.Unstructured) string {
	volumes, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumes")
	for _, v := range volumes {
		m, _ := v.(map[string]any)
		if m["name"] == "dshm" {
			size, _, _ := unstructured.NestedString(m, "emptyDir", "sizeLimit")
			return size
		}
	}
	return ""
}

// oneImageChart is the last commit whose chart (0.1.0) ran the webhook and the agent from one
// image, `shmguard`, as `shmguard serve` and `shmguard agent`.
const oneImageChart = "479c92880510bf57d75bdc39236e0ac0dd5670e6"

// An upgrade from chart 0.1.0 (one image) to this chart (an image per deployable), as
// docs/operating.md ("Upgrading") says to run it: an image.repository that still names the one
// image, or --reuse-values (which keeps 0.1.0's defaults), is refused before anything changes;
// --reset-then-reuse-values rolls the Deployment and the DaemonSet onto their own images with
// no subcommand, and leaves the webhook configurations and the policy as they were.
func TestHelmUpgradeFromOneImage(t *testing.T) {
	const release, ns = "shmguard-upgrade", "shmguard-upgrade-e2e"
	old := t.TempDir()
	if out, err := exec.Command("git", "-C", repoRoot, "cat-file", "-e", oneImageChart+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("chart 0.1.0 (commit %s) is not in this clone's history (a shallow clone?): %v %s", oneImageChart, err, out)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" charts/shmguard | tar -x -C "$3"`, "sh", repoRoot,
		oneImageChart, old)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive of chart 0.1.0: %v\n%s", err, out)
	}
	ca, err := os.ReadFile(cp.WebhookCA())
	if err != nil {
		t.Fatal(err)
	}
	// Registered for labelled namespaces only (none here), so that the release's webhooks, which
	// have no running pods on this control plane, reach no other test's pods.
	sets := []string{"--set", "certManager.enabled=false", "--set", "tls.secretName=shmguard-tls",
		"--set", "tls.caBundle=" + base64.StdEncoding.EncodeToString(ca), "--set", "webhook.scope=labelled",
		"--set", "agent.namespace=" + ns, "--set", "agent.createNamespace=false"}
	install := append([]string{"install", release, filepath.Join(old, "charts", "shmguard"), "-n", ns,
		"--create-namespace"}, sets...)
	if out, err := cp.Run(nil, "helm", install...); err != nil {
		t.Fatalf("helm install of chart 0.1.0: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = cp.Run(nil, "helm", "uninstall", release, "-n", ns)
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	type workload struct{ image, args string }
	workloads := func() (webhook, agent workload) {
		d, err := client.AppsV1().Deployments(ns).Get(ctxFor(t), release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := client.AppsV1().DaemonSets(ns).Get(ctxFor(t), release+"-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, a := d.Spec.Template.Spec.Containers[0], ds.Spec.Template.Spec.Containers[0]
		return workload{c.Image, strings.Join(c.Args, " ")}, workload{a.Image, strings.Join(a.Args, " ")}
	}
	// The webhook configurations and the policy, which must not change but for what this chart
	// adds: the rule of each validating entry for a resize (docs/checks.md#resize-below-shm),
	// taken out and counted.
	resizeRules := 0
	unchanged := func() string {
		var parts []string
		m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctxFor(t), release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctxFor(t), release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctxFor(t), release+"-policy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		resizeRules = 0
		for i := range v.Webhooks {
			rules := v.Webhooks[i].Rules[:0]
			for _, r := range v.Webhooks[i].Rules {
				if slices.Equal(r.Resources, []string{"pods/resize"}) {
					resizeRules++
					continue
				}
				rules = append(rules, r)
			}
			v.Webhooks[i].Rules = rules
		}
		for _, o := range []any{m.Webhooks, v.Webhooks, cm.Data} {
			b, _ := json.Marshal(o)
			parts = append(parts, string(b))
		}
		return strings.Join(parts, "\n")
	}
	webhook, agent := workloads()
	if webhook.image != "shmguard:0.1.0" || !strings.HasPrefix(webhook.args, "serve ") ||
		agent.image != "shmguard:0.1.0" || !strings.HasPrefix(agent.args, "agent ") {
		t.Fatalf("chart 0.1.0 installed webhook %+v, agent %+v: not the one image with its subcommands", webhook, agent)
	}
	before := unchanged()

	refused := []struct {
		name string
		args []string
	}{
		{"image.repository still the one image", append(append([]string{}, sets...), "--set",
			"image.repository=registry.example/ml/shmguard")},
		{"--reuse-values", []string{"--reuse-values"}},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			args := append([]string{"upgrade", release, chartDir(), "-n", ns}, r.args...)
			out, err := cp.Run(nil, "helm", args...)
			if err == nil {
				t.Fatalf("helm upgrade %v was not refused:\n%s", r.args, out)
			}
			if said := string(out) + err.Error(); !strings.Contains(said, "the one image of shmguard chart 0.1.0") ||
				!strings.Contains(said, "agent.image.repository") {
				t.Errorf("refused without saying what to set:\n%s", said)
			}
			if w, a := workloads(); w != webhook || a != agent {
				t.Errorf("a refused upgrade changed the workloads: webhook %+v, agent %+v", w, a)
			}
		})
	}

	if out, err := cp.Run(nil, "helm", "upgrade", release, chartDir(), "-n", ns, "--reset-then-reuse-values"); err != nil {
		t.Fatalf("helm upgrade --reset-then-reuse-values: %v\n%s", err, out)
	}
	webhook, agent = workloads()
	version := chartVersion(t)
	if webhook.image != "shmguard-webhook:"+version || strings.Contains(" "+webhook.args+" ", " serve ") ||
		!strings.HasPrefix(webhook.args, "--") {
		t.Errorf("after the upgrade the webhook runs %+v: want image shmguard-webhook:%s, flags only", webhook, version)
	}
	if agent.image != "shmguard-agent:"+version || strings.Contains(" "+agent.args+" ", " agent ") ||
		!strings.HasPrefix(agent.args, "--") {
		t.Errorf("after the upgrade the agent runs %+v: want image shmguard-agent:%s, flags only", agent, version)
	}
	if after := unchanged(); after != before {
		t.Errorf("the upgrade changed the webhook configurations or the policy:\nbefore %s\nafter  %s", before, after)
	}
	if resizeRules != 6 {
		t.Errorf("after the upgrade %d validating entries check a resize, want all 6", resizeRules)
	}
}

// chartVersion is this chart's appVersion, the images' tag.
func chartVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	return chart.AppVersion
}

// Policy and hybrid modes need MutatingAdmissionPolicy in admissionregistration.k8s.io/v1 (GA in
// Kubernetes 1.36). The chart refuses them, saying so, where the API server does not serve it:
// against a cluster from the kinds it lists (a dry run against this API server; the version
// matrix runs this test on each minor), and in `helm template` from --kube-version. The webhook
// mode renders on every supported minor.
func TestHelmRefusesPolicyModeWithoutMutatingAdmissionPolicy(t *testing.T) {
	const refusal = "needs MutatingAdmissionPolicy in admissionregistration.k8s.io/v1"
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	minor, _ := strconv.Atoi(strings.TrimSuffix(version.Minor, "+"))
	served := false
	if list, err := client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1"); err == nil {
		for _, r := range list.APIResources {
			served = served || r.Kind == "MutatingAdmissionPolicy"
		}
	}
	if served != (minor >= 36) {
		t.Errorf("Kubernetes %s.%s serves MutatingAdmissionPolicy v1: %v", version.Major, version.Minor, served)
	}
	ca, err := os.ReadFile(cp.WebhookCA())
	if err != nil {
		t.Fatal(err)
	}
	install := []string{"install", "shmguard-modes", chartDir(), "-n", "shmguard-modes", "--dry-run=server",
		"--set", "certManager.enabled=false", "--set", "tls.caBundle=" + base64.StdEncoding.EncodeToString(ca),
		"--set", "agent.enabled=false"}
	for _, mode := range []string{"policy", "hybrid"} {
		_, err := cp.Run(nil, "helm", append(install, "--set", "mode="+mode)...)
		if refused := err != nil && strings.Contains(err.Error(), refusal); refused == served {
			t.Errorf("helm install --dry-run=server --set mode=%s on Kubernetes %s (MutatingAdmissionPolicy v1 served: %v): %v",
				mode, version.GitVersion, served, err)
		}
	}
	if _, err := cp.Run(nil, "helm", install...); err != nil {
		t.Errorf("the webhook mode on Kubernetes %s: %v", version.GitVersion, err)
	}
	cases := []struct {
		kube    string
		refused bool
	}{{"1.33.13", true}, {"1.35.4", true}, {"1.36.3", false}, {"1.37.2", false}}
	for _, c := range cases {
		_, err := cp.Run(nil, "helm", "template", "x", chartDir(), "--kube-version", c.kube, "--set", "mode=hybrid")
		if refused := err != nil && strings.Contains(err.Error(), refusal); refused != c.refused {
			t.Errorf("helm template --kube-version %s --set mode=hybrid: refused %v, want %v (%v)", c.kube, refused, c.refused, err)
		}
		if _, err := cp.Run(nil, "helm", "template", "x", chartDir(), "--kube-version", c.kube); err != nil {
			t.Errorf("helm template --kube-version %s (the webhook): %v", c.kube, err)
		}
	}
}
