package node

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"shmguard.io/e2e/controlplane"
	"shmguard.io/e2e/fleet"
)

// stopWebhook scales shmguard's Deployment to 0 and waits until none of its pods is left, so
// that the API server finds no endpoint and the mutating webhook's failurePolicy (Ignore)
// admits pods unpatched. The Deployment is scaled back, and waited for, when the test ends.
func stopWebhook(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 5*time.Minute)
	deps := client.AppsV1().Deployments(controlplane.ReleaseNamespace)
	scale, err := deps.GetScale(ctx, controlplane.ReleaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := scale.Spec.Replicas
	t.Cleanup(func() {
		if err := fleet.Scale(ctx, client, controlplane.ReleaseNamespace, controlplane.ReleaseName, replicas); err != nil {
			t.Errorf("scaling shmguard back to %d replicas: %v", replicas, err)
			return
		}
		webhookWhole(t, ctx)
	})
	if err := fleet.Scale(ctx, client, controlplane.ReleaseNamespace, controlplane.ReleaseName, 0); err != nil {
		t.Fatal(err)
	}
	wait(t, 2*time.Minute, "shmguard's pods gone", func() error {
		pods, err := client.CoreV1().Pods(controlplane.ReleaseNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: controlplane.WebhookSelector})
		if err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Errorf("%d left", n)
		}
		return nil
	})
}

// With the webhook down, a GPU pod is admitted (failurePolicy Ignore) with the container's
// 64 MiB /dev/shm. The node agent finds it within 30 s: a Warning Event ShmUnpatched on the pod
// naming the size shmguard would give it, the gauges shmguard_unpatched_pods of its namespace
// and shmguard_pod_shm_unpatched_required_bytes of the pod, and an UNPATCHED line in
// `shmguard top`. A GPU pod the webhook did patch, in the same namespace, is none of these.
func TestAGpuPodAdmittedWhileTheWebhookIsDownIsReportedByTheAgent(t *testing.T) {
	agent := agentPod(t)
	ns := newNamespace(t, nil)
	ctx := ctxFor(t, 5*time.Minute)
	patched := annotate(shell(trainPod("patched", 1, "8Gi"), "sleep 3600"),
		"shmguard.io/num-workers", "4", "shmguard.io/batch-bytes", "64Mi")
	got, err := client.CoreV1().Pods(ns).Create(ctx, patched, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !controlplane.HasDshm(&got.Spec) {
		t.Fatalf("with shmguard up, %s was not patched", got.Name)
	}

	stopWebhook(t)
	p := annotate(shell(trainPod("unpatched", 1, "8Gi"), "sleep 3600"),
		"shmguard.io/num-workers", "4", "shmguard.io/batch-bytes", "64Mi")
	created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a GPU pod with shmguard down: %v (the mutating webhook's failurePolicy is Ignore)", err)
	}
	if controlplane.HasDshm(&created.Spec) || created.Annotations["shmguard.io/plan"] != "" {
		t.Fatalf("the pod was patched with shmguard down: %+v", created.Spec.Volumes)
	}
	start := time.Now()
	var event corev1.Event
	var line string
	wait(t, 30*time.Second, "the agent's ShmUnpatched Event and gauges", func() error {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"reason": "ShmUnpatched"}.String()})
		if err != nil {
			return err
		}
		if len(events.Items) != 1 {
			return fmt.Errorf("%d ShmUnpatched Events", len(events.Items))
		}
		event = events.Items[0]
		metrics := agentMetrics(t, agent)
		count := regexp.MustCompile(`(?m)^shmguard_unpatched_pods\{namespace="` + regexp.QuoteMeta(ns) + `"\} (\d+)$`).
			FindStringSubmatch(metrics)
		if count == nil || count[1] != "1" {
			return fmt.Errorf("shmguard_unpatched_pods of %s: %v", ns, count)
		}
		m := regexp.MustCompile(`(?m)^shmguard_pod_shm_unpatched_required_bytes\{namespace="` + regexp.QuoteMeta(ns) +
			`",pod="unpatched",policy_made="false"\} (\d+)$`).FindStringSubmatch(metrics)
		if m == nil {
			return fmt.Errorf("no shmguard_pod_shm_unpatched_required_bytes of the pod")
		}
		line = m[0]
		return nil
	})
	t.Logf("found in %.1fs: %s; Event: %s", time.Since(start).Seconds(), line, event.Message)
	if event.InvolvedObject.Name != "unpatched" || event.Type != corev1.EventTypeWarning ||
		!strings.Contains(event.Message, "/dev/shm is 64Mi (container default), below the ") {
		t.Errorf("the Event: on %s, type %s, message %q", event.InvolvedObject.Name, event.Type, event.Message)
	}
	cmd := exec.Command(cp.Shmguard, "top", "-n", ns)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shmguard top: %v\n%s", err, out)
	}
	t.Logf("shmguard top -n %s:\n%s", ns, out)
	unpatchedLine := regexp.MustCompile(`(?m)^unpatched\s+\(not patched\)\s+-\s+-\s+needs \S+\s+-\s+UNPATCHED\b`)
	if !unpatchedLine.Match(out) || regexp.MustCompile(`(?m)^patched\s.*UNPATCHED`).Match(out) {
		t.Errorf("shmguard top does not show the unpatched pod, and only it, as UNPATCHED")
	}
}
