package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// A resize of a pod against its /dev/shm (docs/checks.md#resize-below-shm), on the real API
// server, through the chart's validating webhook: a memory limit shrunk by a MiB below the least
// that holds the pod's /dev/shm is denied where enforced and warned elsewhere; shrunk to that
// least, or grown, it passes. Kubernetes 1.33 onwards (the resize subresource).
func TestResizeBelowShm(t *testing.T) {
	checkResizes(t, []resizeCase{
		{"enforced", map[string]string{"shmguard.io/policy-mode": "false", "shmguard.io/enforce": "true"}, true,
			`admission webhook "validate-enforce.shmguard.io" denied the request`},
		{"warned", map[string]string{"shmguard.io/policy-mode": "false"}, false, ""},
	})
}

// The same through policy mode's ValidatingAdmissionPolicies (Kubernetes 1.36 onwards), held to
// the same MiB as the webhook. Its bindings answer to a label of their own, and its namespaces
// turn the webhook and the other tests' policies away (the API server drops a deleted policy a
// moment after the test that made it ends).
func TestResizeBelowShmPolicyMode(t *testing.T) {
	applyPolicyMode(t, "e2e-resize", cp.ShmguardPolicy(), "shmguard.io/resize-e2e", "policy")
	alone := map[string]string{"shmguard.io/enabled": "false", "shmguard.io/policy-mode": "false"}
	enforced := map[string]string{"shmguard.io/enforce": "true"}
	for k, v := range alone {
		enforced[k] = v
	}
	checkResizes(t, []resizeCase{
		{"policy mode, enforced", enforced, true, `ValidatingAdmissionPolicy 'e2e-resize-resize-enforce'`},
		{"policy mode, warned", alone, false, ""},
	})
}

type resizeCase struct {
	name    string
	labels  map[string]string
	enforce bool
	denier  string // what a denial's message starts with
}

func checkResizes(t *testing.T, cases []resizeCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := newNamespace(t, c.labels)
			if strings.HasPrefix(c.name, "policy") { // its bindings take a moment to reach a new namespace
				waitForResizePolicies(t, ns, c.name)
			}
			pod, size := createResizablePod(t, ns, "trainer")
			least := new(resource.Quantity)
			*least = size.DeepCopy()
			least.Add(size) // maxFractionOfMemoryLimit 0.5: the limit must be twice /dev/shm
			under := least.DeepCopy()
			under.Sub(resource.MustParse("1Mi"))

			warns, err := resizeMemory(t, ns, pod, under.String())
			if c.enforce {
				msg := statusMessage(err)
				if err == nil || !strings.Contains(msg, c.denier) || !strings.Contains(msg, resizeWords) {
					t.Fatalf("a limit of %s under a %s /dev/shm: want a denial by %s saying %q, got %v",
						under.String(), size.String(), c.denier, resizeWords, err)
				}
				t.Logf("%s under %s refused: %s", under.String(), size.String(), msg)
				if !strings.Contains(msg, "keep the limit at "+least.String()+" or more") {
					t.Errorf("the denial does not name the least limit %s: %s", least.String(), msg)
				}
				if got := memoryLimit(t, ns, pod); got != "64Gi" {
					t.Errorf("denied, yet the limit is now %s", got)
				}
			} else {
				if err != nil {
					t.Fatalf("a warned namespace refused the resize: %v", err)
				}
				t.Logf("%s under %s warned: %q", under.String(), size.String(), warns)
				if !containsAny(warns, resizeWords) {
					t.Errorf("no warning says %q: %q", resizeWords, warns)
				}
				if got := memoryLimit(t, ns, pod); got != under.String() {
					t.Errorf("the resize was allowed, yet the limit is %s, not %s", got, under.String())
				}
				if _, err := resizeMemory(t, ns, pod, "64Gi"); err != nil {
					t.Fatalf("growing the limit back: %v", err)
				}
			}
			for _, to := range []string{least.String(), "128Gi"} {
				warns, err := resizeMemory(t, ns, pod, to)
				if err != nil {
					t.Errorf("resize to %s (the least that holds %s, then more) refused: %v", to, size.String(), err)
				}
				if containsAny(warns, resizeWords) {
					t.Errorf("resize to %s warned: %q", to, warns)
				}
			}
		})
	}
}

// How the webhook's words (docs/checks.md#resize-below-shm) and the policies' message begin.
const resizeWords = "this resize leaves the memory limit"

// createResizablePod creates a Burstable GPU pod sized from its DataLoader annotations (so its
// QoS class survives a change of its memory limit) and returns its name and its /dev/shm size.
func createResizablePod(t *testing.T, ns, name string) (string, resource.Quantity) {
	t.Helper()
	pod := readObjects(t, "testdata/pods/annotated.yaml")[0]
	pod.SetName(name)
	containers := pod.Object["spec"].(map[string]any)["containers"].([]any)
	container := containers[0].(map[string]any)
	container["resources"].(map[string]any)["requests"] = map[string]any{"memory": "1Gi", "cpu": "100m"}
	// Kubernetes 1.33 refuses to lower a memory limit in place unless the container restarts for
	// it (pkg/apis/core/validation/validation.go:5847 at v1.33.13); 1.34 on lowers it either way.
	// A container may restart for a resize only in a pod that restarts its containers.
	container["resizePolicy"] = []any{map[string]any{"resourceName": "memory", "restartPolicy": "RestartContainer"}}
	pod.Object["spec"].(map[string]any)["restartPolicy"] = "Always"
	stored, _, err := createObject(t, ns, pod, false)
	if err != nil {
		t.Fatal(err)
	}
	shm := readShm(&asPod(t, stored).Spec)
	if shm.size == nil {
		t.Fatalf("the pod has no sized /dev/shm: %v", stored.Object["spec"])
	}
	return name, *shm.size
}

// resizeMemory sets the pod's container's memory limit through the resize subresource, and
// returns the warnings the API server sent.
func resizeMemory(t *testing.T, ns, pod, limit string) ([]string, error) {
	t.Helper()
	cfg := mustRestConfig(t)
	w := &warnings{}
	cfg.WarningHandler = w
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"train","resources":{"limits":{"memory":%q}}}]}}`, limit)
	_, err = c.CoreV1().Pods(ns).Patch(ctxFor(t), pod, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{}, "resize")
	return w.all(), err
}

func memoryLimit(t *testing.T, ns, pod string) string {
	t.Helper()
	p, err := client.CoreV1().Pods(ns).Get(ctxFor(t), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	return q.String()
}

// waitForResizePolicies waits until policy mode is in force in `ns`: a GPU pod is patched, and a
// resize below its /dev/shm is denied or warned (the API server's informers have the bindings).
// A pod made for it alone is resized back and forth.
func waitForResizePolicies(t *testing.T, ns, what string) {
	t.Helper()
	waitForPolicies(t, ns, readObjects(t, "testdata/pods/annotated.yaml")[0].Object)
	pod, size := createResizablePod(t, ns, "probe")
	eventually(t, 30*time.Second, what+": a resize below /dev/shm answered", func() error {
		warns, err := resizeMemory(t, ns, pod, size.String())
		if err != nil {
			if strings.Contains(statusMessage(err), resizeWords) {
				return nil
			}
			return err
		}
		_, _ = resizeMemory(t, ns, pod, "64Gi")
		if !containsAny(warns, resizeWords) {
			return fmt.Errorf("allowed, and no warning yet: %q", warns)
		}
		return nil
	})
}
