package node

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"shmguard.io/e2e/controlplane"
)

const agentNamespace = "shmguard-agent"

// agentPod is the node agent's pod on the real node once it is Ready (not one of those the
// DaemonSet runs on a fleet's KWOK nodes).
func agentPod(t *testing.T) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	wait(t, 2*time.Minute, "the node agent Ready", func() error {
		pods, err := client.CoreV1().Pods(agentNamespace).List(ctxFor(t, time.Minute), metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/component=agent", FieldSelector: "spec.nodeName=" + controlplane.NodeName})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			for _, c := range pods.Items[i].Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					pod = &pods.Items[i]
					return nil
				}
			}
		}
		return fmt.Errorf("%d agent pods, none Ready", len(pods.Items))
	})
	return pod
}

// agentMetrics is the agent's /metrics, scraped at the pod's address on its port named metrics,
// as Prometheus does.
func agentMetrics(t *testing.T, agent *corev1.Pod) string {
	t.Helper()
	var port int32
	for _, p := range agent.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			port = p.ContainerPort
		}
	}
	if port == 0 {
		t.Fatalf("the agent's pod names no port metrics: %+v", agent.Spec.Containers[0].Ports)
	}
	hc, err := cp.PodHTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	res, err := hc.Get(fmt.Sprintf("http://%s/metrics", net.JoinHostPort(agent.Status.PodIP, strconv.Itoa(int(port)))))
	if err != nil {
		t.Fatalf("the agent's metrics: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("the agent's metrics: HTTP %d, %v", res.StatusCode, err)
	}
	return string(b)
}

// gauge reads one shmguard_pod_shm_*_bytes sample of a pod's volume.
func gauge(metrics, name, ns, pod string) (int64, bool) {
	re := regexp.MustCompile(`(?m)^` + name + `\{namespace="` + regexp.QuoteMeta(ns) + `",pod="` +
		regexp.QuoteMeta(pod) + `",volume="[^"]+",workload="[^"]*"\} (\d+)$`)
	m := re.FindStringSubmatch(metrics)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n, true
}

func shmEvents(t *testing.T, ns, pod string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(ctxFor(t, time.Minute), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": "ShmNearFull"}.String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// A DataLoader whose annotations understate its batches (3500Ki where they are 12Mi) gets a
// /dev/shm just above its peak: the agent sees it pass 90 % and records ShmNearFull on the pod,
// before any Bus error, and its metrics keep the peak. A pod that uses little of its /dev/shm,
// in the same namespace, gets no Event.
func TestAgentWarnsOfAFillingShmAndKeepsItsPeak(t *testing.T) {
	agent := agentPod(t)
	ns := newNamespace(t, nil)
	args := []string{"--workers", "4", "--prefetch", "2", "--batch-bytes", strconv.Itoa(12 << 20),
		"--batches", "100", "--step-seconds", "0.1"}
	p := annotate(trainPod("understated", 1, "2Gi", args...),
		"shmguard.io/num-workers", "4", "shmguard.io/prefetch-factor", "2", "shmguard.io/batch-bytes", "3500Ki")
	quiet := annotate(shell(trainPod("quiet", 1, "2Gi"), "sleep 8"),
		"shmguard.io/num-workers", "4", "shmguard.io/batch-bytes", "64Mi")
	if _, err := client.CoreV1().Pods(ns).Create(ctxFor(t, time.Minute), quiet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := run(t, ns, p, 3*time.Minute).succeeded(t)
	res := r.result(t)
	size := shmVolume(r.pod)
	t.Logf("planned %s from understated annotations; the DataLoader's peak %s (%.0f%%)", mib(size), mib(res.Peak),
		100*float64(res.Peak)/float64(size))
	var events []corev1.Event
	wait(t, 30*time.Second, "a ShmNearFull Event on "+r.pod.Name, func() error {
		if events = shmEvents(t, ns, r.pod.Name); len(events) == 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
	e := events[0]
	if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "/dev/shm (volume dshm) is ") ||
		e.Source.Host != "shmguard-node" {
		t.Errorf("the Event: type %s, source %+v, message %q", e.Type, e.Source, e.Message)
	}
	t.Logf("Event (count %d): %s", e.Count, e.Message)
	if len(events) != 1 || e.Count < 1 {
		t.Errorf("%d ShmNearFull Events (the first counted %d) for one pod's volume, want 1 counting its crossings",
			len(events), e.Count)
	}
	metrics := agentMetrics(t, agent)
	peak, ok := gauge(metrics, "shmguard_pod_shm_peak_bytes", ns, r.pod.Name)
	sized, _ := gauge(metrics, "shmguard_pod_shm_size_bytes", ns, r.pod.Name)
	if !ok || sized != size || float64(peak) < 0.9*float64(size) || peak > size {
		t.Errorf("the agent's peak %d and size %d bytes; the plan %d, the DataLoader's own peak %d", peak, sized, size, res.Peak)
	}
	t.Logf("the agent's sampled peak %s is %.1f%% below the DataLoader's own (sampled every 2 ms)", mib(peak),
		100*(1-float64(peak)/float64(res.Peak)))
	if !strings.Contains(metrics, `workload="Pod/understated"`) {
		t.Errorf("no workload label Pod/understated in the agent's metrics")
	}
	// `shmguard top` shows the same numbers, read through the API server from the agent.
	cmd := exec.Command(cp.Shmguard, "top", "-n", ns, "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shmguard top: %v\n%s", err, out)
	}
	var top struct {
		Items []struct {
			Pod       string `json:"pod"`
			Workload  string `json:"workload"`
			Node      string `json:"node"`
			PeakBytes int64  `json:"peak_bytes"`
			SizeBytes int64  `json:"size_bytes"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatalf("shmguard top -o json: %v\n%s", err, out)
	}
	found := false
	for _, it := range top.Items {
		if it.Pod == r.pod.Name {
			found = it.PeakBytes >= peak && it.SizeBytes == size && it.Workload == "Pod/understated" && it.Node == "shmguard-node"
		}
	}
	if !found {
		t.Errorf("shmguard top -n %s does not show %s with the agent's peak %d and size %d:\n%s", ns, r.pod.Name, peak, size, out)
	}
	if ev := shmEvents(t, ns, "quiet"); len(ev) != 0 {
		t.Errorf("a pod that uses little of its /dev/shm got %d ShmNearFull Events", len(ev))
	}
	if _, ok := gauge(metrics, "shmguard_pod_shm_size_bytes", ns, "quiet"); !ok {
		t.Errorf("the quiet pod's /dev/shm is not in the agent's metrics")
	}
}

// A pod that mounts its own memory volume at "/dev/shm/" (the trailing slash the runtime cleans)
// has its /dev/shm there: the webhook leaves the volume alone, large enough, and adds no second
// one; the agent samples it as the pod's /dev/shm, its size and what the pod wrote.
func TestAMountAtDevShmWithATrailingSlashIsSeenByTheWebhookAndTheAgent(t *testing.T) {
	agent := agentPod(t)
	ns := newNamespace(t, nil)
	const limit, written = 256 << 20, 40 << 20
	p := annotate(shell(trainPod("slash", 1, "2Gi"), fmt.Sprintf(
		"dd if=/dev/zero of=/dev/shm/seg bs=1M count=%d status=none && exec sleep 600", written>>20)),
		"shmguard.io/num-workers", "1", "shmguard.io/batch-bytes", "1Mi")
	p.Spec.Volumes = []corev1.Volume{{Name: "own-shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(limit, resource.BinarySI)}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "own-shm", MountPath: "/dev/shm/"}}
	created, err := client.CoreV1().Pods(ns).Create(ctxFor(t, time.Minute), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range created.Spec.Volumes {
		if v.Name == "dshm" || v.Name == "own-shm" && v.EmptyDir.SizeLimit.Value() != limit {
			t.Errorf("the webhook changed the volumes of a pod with a large enough /dev/shm/: %+v", created.Spec.Volumes)
		}
	}
	var used, size int64
	wait(t, 2*time.Minute, "the agent's sample of "+created.Name+"'s /dev/shm/", func() error {
		metrics := agentMetrics(t, agent)
		var ok bool
		if size, ok = gauge(metrics, "shmguard_pod_shm_size_bytes", ns, created.Name); !ok {
			return fmt.Errorf("no shmguard_pod_shm_size_bytes for the pod")
		}
		if used, _ = gauge(metrics, "shmguard_pod_shm_used_bytes", ns, created.Name); used < written {
			return fmt.Errorf("used %d bytes, the pod wrote %d", used, written)
		}
		return nil
	})
	t.Logf("the agent samples the volume at /dev/shm/: size %s, used %s", mib(size), mib(used))
	if size != limit {
		t.Errorf("the agent's size of the volume at /dev/shm/ is %d bytes, its sizeLimit %d", size, limit)
	}
}
