package node

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
)

// In-place resizes of a running, patched pod on the real node (docs/checks.md#resize-below-shm).
// Where enforced, a memory limit shrunk by a MiB below the least that holds the pod's /dev/shm
// is refused by the validating webhook and the limit stays; a grown one passes and the kubelet
// applies it. Where shmguard only warns, the shrink is admitted with the warning, and the node
// agent reports the running pod: a ShmMemoryLimitBelowShm Event and its gauge of how far the
// limit is short, gone once the limit is grown back.
func TestResizeBelowShmOnTheNode(t *testing.T) {
	agent := agentPod(t)
	ctx := ctxFor(t, 5*time.Minute)
	start := func(ns string) (string, resource.Quantity) {
		p := annotate(shell(trainPod("resized", 1, "8Gi"), "sleep 3600"),
			"shmguard.io/num-workers", "4", "shmguard.io/batch-bytes", "64Mi")
		// Burstable, so that its QoS class survives a change of its memory limit.
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("256Mi"), corev1.ResourceCPU: resource.MustParse("100m")}
		created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !controlplane.HasDshm(&created.Spec) {
			t.Fatalf("the pod was not patched")
		}
		size := *resource.NewQuantity(shmVolume(created), resource.BinarySI)
		wait(t, 2*time.Minute, "the pod running", func() error {
			got, err := client.CoreV1().Pods(ns).Get(ctx, "resized", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("phase %s", got.Status.Phase)
			}
			return nil
		})
		return "resized", size
	}

	t.Run("enforced: a shrink below /dev/shm is refused, a growth applied", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{"shmguard.io/enforce": "true"})
		pod, size := start(ns)
		least := size.DeepCopy()
		least.Add(size) // maxFractionOfMemoryLimit 0.5
		under := least.DeepCopy()
		under.Sub(resource.MustParse("1Mi"))
		_, err := resize(t, ns, pod, under.String())
		if err == nil || !strings.Contains(err.Error(), "this resize leaves the memory limit") {
			t.Fatalf("a limit of %s under a %s /dev/shm: want the webhook's denial, got %v", under.String(), size.String(), err)
		}
		t.Logf("refused: %v", err)
		if _, err := resize(t, ns, pod, "12Gi"); err != nil {
			t.Fatalf("growing the limit to 12Gi: %v", err)
		}
		wait(t, time.Minute, "the kubelet applying 12Gi", func() error {
			return actual(ctx, ns, pod, "12Gi")
		})
	})

	t.Run("warned: the shrink is admitted, and the agent reports the running pod", func(t *testing.T) {
		ns := newNamespace(t, nil)
		pod, size := start(ns)
		least := size.DeepCopy()
		least.Add(size)
		under := least.DeepCopy()
		under.Sub(resource.MustParse("1Mi"))
		warns, err := resize(t, ns, pod, under.String())
		if err != nil {
			t.Fatalf("a warned namespace refused the resize: %v", err)
		}
		if !strings.Contains(strings.Join(warns, "\n"), "this resize leaves the memory limit") {
			t.Errorf("no warning: %q", warns)
		}
		began := time.Now()
		gaugeRe := regexp.MustCompile(`(?m)^shmguard_pod_memory_limit_below_shm_bytes\{namespace="` +
			regexp.QuoteMeta(ns) + `",pod="resized",volume="dshm"\} (\d+)$`)
		var event corev1.Event
		wait(t, 30*time.Second, "the agent's ShmMemoryLimitBelowShm Event and gauge", func() error {
			events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: fields.Set{"reason": "ShmMemoryLimitBelowShm"}.String()})
			if err != nil {
				return err
			}
			if len(events.Items) != 1 {
				return fmt.Errorf("%d Events", len(events.Items))
			}
			event = events.Items[0]
			m := gaugeRe.FindStringSubmatch(agentMetrics(t, agent))
			if m == nil || m[1] != "1048576" { // a MiB short
				return fmt.Errorf("the gauge: %v", m)
			}
			return nil
		})
		t.Logf("reported in %.1fs: %s", time.Since(began).Seconds(), event.Message)
		if event.Type != corev1.EventTypeWarning || event.InvolvedObject.Name != pod ||
			!strings.HasPrefix(event.Message, "the memory limit "+under.String()+" (sum of container limits) is too small") ||
			!strings.Contains(event.Message, "keep the limit at "+least.String()+" or more") {
			t.Errorf("the Event: type %s on %s: %q", event.Type, event.InvolvedObject.Name, event.Message)
		}
		if err := actual(ctx, ns, pod, under.String()); err != nil {
			t.Logf("the kubelet has not applied %s (yet): %v", under.String(), err)
		}
		if _, err := resize(t, ns, pod, least.String()); err != nil {
			t.Fatalf("growing the limit back to %s: %v", least.String(), err)
		}
		wait(t, 30*time.Second, "the gauge gone once the limit holds /dev/shm", func() error {
			if m := gaugeRe.FindString(agentMetrics(t, agent)); m != "" {
				return fmt.Errorf("still %s", m)
			}
			return nil
		})
	})
}

// resize sets the pod's container's memory limit through the resize subresource; the warnings
// the API server sent back.
func resize(t *testing.T, ns, pod, limit string) ([]string, error) {
	t.Helper()
	cfg, err := cp.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	w := &warningList{}
	cfg.WarningHandler = w
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"train","resources":{"limits":{"memory":%q}}}]}}`, limit)
	_, err = c.CoreV1().Pods(ns).Patch(ctxFor(t, time.Minute), pod, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{}, "resize")
	return w.list, err
}

type warningList struct{ list []string }

func (w *warningList) HandleWarningHeader(_ int, _ string, text string) {
	w.list = append(w.list, text)
}

// actual is nil once the kubelet reports the container running with memory limit `limit`.
func actual(ctx context.Context, ns, pod, limit string) error {
	got, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range got.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return fmt.Errorf("%s: %s %s", c.Type, c.Reason, c.Message)
		}
	}
	if len(got.Status.ContainerStatuses) == 0 || got.Status.ContainerStatuses[0].Resources == nil {
		return fmt.Errorf("no resources in the container's status")
	}
	q := got.Status.ContainerStatuses[0].Resources.Limits[corev1.ResourceMemory]
	if q.Cmp(resource.MustParse(limit)) != 0 {
		return fmt.Errorf("the container runs with %s", q.String())
	}
	return nil
}
