package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// Pods written for the parts of the Pod path the corpus seldom reaches: IPC_LOCK for RDMA as
// root and as non-root, init containers, a memory emptyDir too small or unmounted, processes
// and nodes from the launcher, NCCL's shm transport off, malformed annotations.
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
// them when t ends.
func applyPolicyMode(t *testing.T, name string) {
	t.Helper()
	out, code := runShmguard(t, nil, "policy", "export", "--config", cp.ShmguardPolicy(), "--name", name,
		"--enabled-label", "shmguard.io/policy-mode")
	if code != 0 {
		t.Fatalf("shmguard policy export: exit %d\n%s", code, out)
	}
	objects := parseObjects(t, []byte(out))
	if len(objects) != 6 {
		t.Fatalf("shmguard policy export wrote %d objects, want 6", len(objects))
	}
	cfg, err := cp.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objects {
		gvr, _ := resourceFor(t, u)
		ri := dyn.Resource(gvr)
		if _, err := ri.Create(ctxFor(t), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		objName := u.GetName()
		t.Cleanup(func() { _ = ri.Delete(context.Background(), objName, metav1.DeleteOptions{}) })
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
	applyPolicyMode(t, "e2e-policy-mode")
	var edges []map[string]any
	for _, e := range policyModeEdgePods {
		var p map[string]any
		if err := json.Unmarshal([]byte(e), &p); err != nil {
			t.Fatal(err)
		}
		p["apiVersion"], p["kind"] = "v1", "Pod"
		edges = append(edges, p)
	}
	pods := append([]map[string]any{}, edges...)
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
			for k, v := range c.labels {
				webhook[k], policy[k] = v, v
			}
			comparePolicyMode(t, c.pods, newNamespaceNamed(t, "webhook", webhook), newNamespaceNamed(t, "policy", policy))
		})
	}
}

// comparePolicyMode creates each pod (dry run) in the webhook's namespace and in the policies'.
func comparePolicyMode(t *testing.T, pods []map[string]any, webhook, policy string) {
	// The API server picks up new policies within a second or so: wait for the first edge pod's
	// plan annotation in policy mode.
	probe := &unstructured.Unstructured{Object: pods[0]}
	probe.SetName("probe")
	eventually(t, 30*time.Second, "the exported policies in force", func() error {
		stored, _, err := createObject(t, policy, probe, true)
		if err != nil {
			return err
		}
		if plan := stored.GetAnnotations()["shmguard.io/plan"]; !strings.Contains(plan, `"policyMode":true`) {
			return fmt.Errorf("plan annotation %q", plan)
		}
		return nil
	})
	equal, refused, explained := 0, 0, map[string]int{}
	for i, p := range pods {
		u := &unstructured.Unstructured{Object: p}
		u.SetName(fmt.Sprintf("pm-%d", i))
		u.SetNamespace("")
		for _, f := range []string{"serviceAccountName", "serviceAccount", "runtimeClassName", "priorityClassName", "priority"} {
			unstructured.RemoveNestedField(u.Object, "spec", f)
		}
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
	t.Logf("%d pods: %d equal, %d refused by both, differing as listed: %v", len(pods), equal, refused, explained)
	if equal < len(pods)/2 {
		t.Errorf("only %d of %d pods were equal", equal, len(pods))
	}
	if len(pods) != equal+refused+sum(explained) {
		t.Errorf("%d pods, %d accounted for", len(pods), equal+refused+sum(explained))
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
