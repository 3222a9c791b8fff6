// Command agent-cost measures what the node agent (`shmguard-agent`) costs a node with N pods
// that mount a memory-backed /dev/shm: for each N, the pods run (sleeping, each with a 64 MiB
// dshm), the agent is seen watching all of them, and its pod's CPU time over a window and its
// memory are read from its cgroup on the node. Runs on the control plane of
// `scripts/control-plane.sh up --node`; bench/agent-cost.sh runs it.
//
//	agent-cost --dir DIR [--pods 10,100] [--seconds 60]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

func main() {
	dir := flag.String("dir", "", "the control plane's state directory (with a node)")
	counts := flag.String("pods", "10,100", "pods on the node, one measurement each")
	seconds := flag.Int("seconds", 60, "the window CPU time is measured over")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: agent-cost --dir DIR [--pods 10,100] [--seconds 60]")
		os.Exit(2)
	}
	if err := run(*dir, *counts, time.Duration(*seconds)*time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "agent-cost: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, counts string, window time.Duration) error {
	s, cs, err := controlplane.LoadNode(dir)
	if err != nil {
		return err
	}
	scrape, err := s.PodHTTPClient()
	if err != nil {
		return err
	}
	image := s.Node.Images["SHMGUARD_TRAIN_IMAGE"]
	fmt.Printf("The node agent (1 s samples) on a node whose pods each mount a 64 MiB memory dshm; CPU over %s\n\n", window)
	fmt.Println("| pods with /dev/shm | CPU | CPU per pod-sample | RSS | cgroup memory peak |")
	fmt.Println("|---|---|---|---|---|")
	for _, field := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 0 {
			return fmt.Errorf("--pods: %q is not a count", field)
		}
		if err := measure(cs, scrape, image, n, window); err != nil {
			return err
		}
	}
	return nil
}

func measure(cs *kubernetes.Clientset, scrape *http.Client, image string, n int, window time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ns, err := controlplane.NewNamespace(ctx, cs, "agent-cost", nil)
	if err != nil {
		return err
	}
	defer deleteNamespace(cs, ns)
	for i := 0; i < n; i++ {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, shmPod(fmt.Sprintf("p%d", i), image), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	agent, err := agentPod(ctx, cs)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://%s/metrics", net.JoinHostPort(agent.Status.PodIP, "8080"))
	for _, p := range agent.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			url = fmt.Sprintf("http://%s/metrics", net.JoinHostPort(agent.Status.PodIP, strconv.Itoa(int(p.ContainerPort))))
		}
	}
	// Every pod Running and every one of their volumes sampled by the agent.
	sampled := regexp.MustCompile(`(?m)^shmguard_pod_shm_size_bytes\{namespace="` + ns + `",`)
	for {
		metrics, err := get(scrape, url)
		if err != nil {
			return err
		}
		if len(sampled.FindAllStringIndex(metrics, -1)) == n {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods: the agent samples %d of their volumes", n, len(sampled.FindAllStringIndex(metrics, -1)))
		case <-time.After(time.Second):
		}
	}
	before, err := controlplane.PodCgroupUsage(agent)
	if err != nil {
		return err
	}
	time.Sleep(window)
	after, err := controlplane.PodCgroupUsage(agent)
	if err != nil {
		return err
	}
	cpu := time.Duration(after.CPUNanos - before.CPUNanos)
	share := 100 * cpu.Seconds() / window.Seconds()
	perSample := "-"
	if n > 0 {
		perSample = fmt.Sprintf("%.1f µs", float64(cpu.Microseconds())/(window.Seconds()*float64(n)))
	}
	fmt.Printf("| %d | %.2f %% of a core (%s in %s) | %s | %.1f MiB | %.1f MiB |\n", n, share,
		cpu.Round(time.Millisecond), window, perSample, float64(after.RSS)/(1<<20), float64(after.Peak)/(1<<20))
	return nil
}

// shmPod sleeps with a 64 MiB memory-backed /dev/shm and asks for little, so 100 fit on the node.
func shmPod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "sleep", Image: image, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
			}},
			Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}},
		},
	}
}

// agentPod is the node agent's Running pod.
func agentPod(ctx context.Context, cs *kubernetes.Clientset) (*corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=agent"})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no Running agent pod (%d found)", len(pods.Items))
}

func get(c *http.Client, url string) (string, error) {
	res, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// deleteNamespace deletes ns and waits until its pods are gone, so the next count starts clean.
func deleteNamespace(cs *kubernetes.Clientset, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
}
