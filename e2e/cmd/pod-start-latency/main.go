// Command pod-start-latency measures what shmguard costs a pod on a real node (the control plane
// of `scripts/control-plane.sh up --node`), and what shmguard's pods cost the node:
//
//   - start latency: GPU pods created one at a time, each timed from the create call until the
//     kubelet reports it Running, in a namespace shmguard patches and in one it leaves alone
//     (shmguard.io/enabled=false), in interleaved rounds; each pod is deleted once Running so
//     the node's 8 GPUs never run out;
//   - shmguard's own use: CPU time and peak memory of shmguard's pods, read from their cgroups on
//     the node, over a burst of GPU pod creates (4 at a time).
//
// bench/pod-start-latency.sh runs it.
//
//	pod-start-latency --dir DIR [--pods 20] [--rounds 3] [--burst 200]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

func main() {
	dir := flag.String("dir", "", "the control plane's state directory (with a node)")
	pods := flag.Int("pods", 20, "pods per namespace in each round")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	burst := flag.Int("burst", 200, "pods created for shmguard's CPU and memory")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: pod-start-latency --dir DIR [--pods N] [--rounds R] [--burst N]")
		os.Exit(2)
	}
	if err := run(*dir, *pods, *rounds, *burst); err != nil {
		fmt.Fprintf(os.Stderr, "pod-start-latency: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string, n, rounds, burst int) error {
	s, cs, err := controlplane.LoadNode(dir)
	if err != nil {
		return err
	}
	image := s.Node.Images["SHMGUARD_TRAIN_IMAGE"]
	with, err := controlplane.NewNamespace(context.Background(), cs, "pod-start", nil)
	if err != nil {
		return err
	}
	without, err := controlplane.NewNamespace(context.Background(), cs, "pod-start", map[string]string{"shmguard.io/enabled": "false"})
	if err != nil {
		return err
	}
	var lat [2][]time.Duration
	for r := 0; r < rounds; r++ {
		for i, ns := range []string{with, without} {
			for p := 0; p < n; p++ {
				d, err := startOne(cs, ns, fmt.Sprintf("start-%d-%d", r, p), image)
				if err != nil {
					return err
				}
				lat[i] = append(lat[i], d)
			}
		}
	}
	fmt.Printf("GPU pod start on the node (create -> Running), %d rounds of %d pods each way, interleaved\n\n", rounds, n)
	fmt.Println("| namespace | pods | p50 | p90 | p99 |")
	fmt.Println("|---|---|---|---|---|")
	for i, name := range []string{"shmguard patches it", "shmguard off"} {
		d := lat[i]
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		fmt.Printf("| %s | %d | %s | %s | %s |\n", name, len(d), ms(pct(d, 0.5)), ms(pct(d, 0.9)), ms(pct(d, 0.99)))
	}

	before, err := usage(cs)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := createBurst(cs, with, burst, image); err != nil {
		return err
	}
	elapsed := time.Since(start)
	after, err := usage(cs)
	if err != nil {
		return err
	}
	fmt.Printf("\nshmguard's pods over %d GPU pod creates (4 at a time, %.1f s; %d replicas)\n\n", burst, elapsed.Seconds(), len(after))
	fmt.Println("| replica | CPU time | CPU per create | memory now | memory peak |")
	fmt.Println("|---|---|---|---|---|")
	for name, a := range after {
		b := before[name]
		cpu := time.Duration(a.CPUNanos - b.CPUNanos)
		fmt.Printf("| %s | %s | %s | %.1f MiB | %.1f MiB |\n", name, ms(cpu), fmt.Sprintf("%.0f µs", float64(cpu.Microseconds())/float64(burst)),
			float64(a.Memory)/(1<<20), float64(a.Peak)/(1<<20))
	}
	for _, ns := range []string{with, without} {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}
	return nil
}

func gpuPod(name, image string) *corev1.Pod {
	p := controlplane.GPUPod(name, 1, "1Gi")
	p.Spec.Containers[0].Image = image
	p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	p.Spec.Containers[0].Command = []string{"sleep", "3600"}
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return p
}

// startOne creates a pod, waits (watching it) until it is Running, deletes it, and returns the
// time from the create call to Running.
func startOne(cs *kubernetes.Clientset, ns, name, image string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods(ns)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	if _, err := pods.Create(ctx, gpuPod(name, image), metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if ok && ev.Type != watch.Deleted && p.Status.Phase == corev1.PodRunning {
			d := time.Since(start)
			return d, pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		if ok && p.Status.Phase == corev1.PodFailed {
			return 0, fmt.Errorf("pod %s/%s failed: %s", ns, name, p.Status.Message)
		}
	}
	return 0, fmt.Errorf("pod %s/%s: not Running within 2 minutes", ns, name)
}

// createBurst creates n GPU pods, 4 at a time. Most stay Pending (8 GPUs): admission is what
// is measured.
func createBurst(cs *kubernetes.Clientset, ns string, n int, image string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), gpuPod(fmt.Sprintf("burst-%d", i), image), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// usage reads each running shmguard pod's cgroup on the node.
func usage(cs *kubernetes.Clientset) (map[string]controlplane.PodUsage, error) {
	pods, err := cs.CoreV1().Pods(controlplane.ReleaseNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=shmguard"})
	if err != nil {
		return nil, err
	}
	out := map[string]controlplane.PodUsage{}
	for i, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		u, err := controlplane.PodCgroupUsage(&pods.Items[i])
		if err != nil {
			return nil, err
		}
		out[p.Name] = u
	}
	return out, nil
}

func pct(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
