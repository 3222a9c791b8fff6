package main

// With --peers, admission-latency compares shmguard with the admission engines a platform team
// would pick instead (bench/peers.sh): no webhook, shmguard's webhook as the chart registers it,
// shmguard's policy mode, Kyverno with a MutatingPolicy and Gatekeeper with Assign mutators
// (bench/peers/), on the same control plane, in interleaved rounds of a closed loop shaped as
// Kyverno's own load test is (k6: V virtual users, each creating pods one after another, I
// times). Per contender it reports creates per second, the client's p50/p99/max, the API
// server's mean per webhook call, CPU seconds per 1,000 creates of the contender's process and
// of kube-apiserver, the TCP connections opened per 1,000 creates, the contender's peak resident
// memory, and how many GPU pods came out with a /dev/shm at least as large as their DataLoader
// and NCCL need.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
)

// needed is what the bench's pod (4 GPUs, 4 processes, 8 workers, prefetch 2, 64Mi batches)
// needs in /dev/shm, worked by hand: the DataLoader 4 × (8 × 2 + 2) × 64Mi = 4608Mi, NCCL's shm
// transport 4 procs × 2 channels × 2 peers × 9637892 B = 147.1Mi, a base of 64Mi; 4819.1Mi ×
// 1.2 headroom, rounded up to the MiB: 5783Mi (docs/policy.md, "How /dev/shm is sized").
var needed = resource.MustParse("5783Mi")

// contender is one way of giving the bench's pods their /dev/shm.
type contender struct {
	name    string
	process string // the process that answers its webhook calls ("" for none: the API server's own)
	mutates bool   // whether its pods come out with a /dev/shm
	apply   func(ctx context.Context) error
}

func (b *bench) contenders(ctx context.Context, peersDir string) ([]contender, error) {
	kyverno, err := controlplane.ReadManifest(b.s.RepoRoot() + "/bench/peers/kyverno-dshm.yaml")
	if err != nil {
		return nil, err
	}
	gatekeeper, err := controlplane.ReadManifest(b.s.RepoRoot() + "/bench/peers/gatekeeper-dshm.yaml")
	if err != nil {
		return nil, err
	}
	b.peerPolicies = append(kyverno, gatekeeper...)
	peer := func(name string, policy []*unstructured.Unstructured) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := b.clear(ctx); err != nil {
				return err
			}
			if err := b.s.StartPeer(ctx, peersDir, name); err != nil {
				return err
			}
			return b.s.CreatePeerPolicy(ctx, policy)
		}
	}
	for _, name := range controlplane.PeerProcesses {
		if err := b.s.InstallPeer(ctx, peersDir, name); err != nil {
			return nil, fmt.Errorf("installing %s: %w", name, err)
		}
	}
	return []contender{
		{"no webhook", "", false, b.clear},
		{"shmguard (webhook)", controlplane.ShmguardProcess, true, func(ctx context.Context) error {
			if err := b.clear(ctx); err != nil {
				return err
			}
			return b.s.RegisterWebhooks(ctx)
		}},
		{"shmguard (policy mode)", "", true, func(ctx context.Context) error { return b.applyPolicies(ctx, b.policies) }},
		{"Kyverno " + peerVersion(peersDir, "kyverno") + " (MutatingPolicy)", controlplane.KyvernoName, true, peer(controlplane.KyvernoName, kyverno)},
		{"Gatekeeper " + peerVersion(peersDir, "gatekeeper") + " (Assign)", controlplane.GatekeeperName, true, peer(controlplane.GatekeeperName, gatekeeper)},
	}, nil
}

// peerVersion is the version in the name of the build directory the peer's binary links to.
func peerVersion(dir, name string) string {
	target, err := os.Readlink(dir + "/" + name)
	if err != nil {
		return ""
	}
	parts := strings.Split(target, "/")
	for _, p := range parts {
		if strings.HasPrefix(p, name+"-v") {
			f := strings.Split(p, "-")
			return f[1]
		}
	}
	return ""
}

// clearPeers deletes the peers' policies and stops the peers.
func (b *bench) clearPeers(ctx context.Context) error {
	if err := b.s.DeleteObjects(ctx, b.peerPolicies); err != nil {
		return err
	}
	for _, name := range controlplane.PeerProcesses {
		if err := b.s.StopPeer(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// loopPod is the bench's GPU pod, as admission-latency's sequential series create it.
func loopPod(name string) *corev1.Pod {
	pod := controlplane.GPUPod(name, 4, "96Gi")
	pod.Annotations = map[string]string{"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "64Mi"}
	return pod
}

// shmOf is the sizeLimit of the memory-backed volume mounted at /dev/shm in every container of
// the pod, and whether there is one.
func shmOf(pod *corev1.Pod) (resource.Quantity, bool) {
	var name string
	for _, c := range pod.Spec.Containers {
		found := ""
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/dev/shm" {
				found = m.Name
			}
		}
		if found == "" || (name != "" && found != name) {
			return resource.Quantity{}, false
		}
		name = found
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory && v.EmptyDir.SizeLimit != nil {
			return *v.EmptyDir.SizeLimit, true
		}
	}
	return resource.Quantity{}, false
}

// loopResult is what one contender measured, over every round.
type loopResult struct {
	client        []time.Duration
	wall          time.Duration
	creates       int
	errors        int
	enough, short int            // pods with a /dev/shm ≥ needed, and with a smaller one
	without       int            // pods without a /dev/shm
	sizes         map[string]int // the sizes given, by count
	cpu, apiCPU   float64        // CPU seconds of its process and of kube-apiserver
	peakRSS       int64          // its process's peak resident memory, the most of any round
	opens         float64        // TCP connections accepted on the machine during the series
	hooks         webhookStats
	firstError    string
}

// waitMutates dry-runs a pod until it comes out as the contender makes it (with a /dev/shm, or
// as it went in): the contender's registration has reached the API server.
func waitMutates(ctx context.Context, cs *kubernetes.Clientset, ns string, mutates bool) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := cs.CoreV1().Pods(ns).Create(ctx, loopPod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			if _, ok := shmOf(out); ok == mutates {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 3m a pod still does not come out as expected (with /dev/shm: %v; last error: %v)", mutates, err)
		}
		time.Sleep(time.Second)
	}
}

// deleteNamespace deletes ns and waits, up to 5 minutes, until it is gone.
func deleteNamespace(cs *kubernetes.Clientset, ns string) {
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "namespace %s not gone after 5m\n", ns)
}

// closedLoop runs one contender's series: vus virtual users, each creating `iterations` pods
// one after another.
func (b *bench) closedLoop(ctx context.Context, c contender, fast *kubernetes.Clientset, vus, iterations int, into *loopResult) error {
	if err := c.apply(ctx); err != nil {
		return fmt.Errorf("registering %s: %w", c.name, err)
	}
	ns, err := controlplane.NewNamespace(ctx, b.cs, "train-peers", nil)
	if err != nil {
		return err
	}
	// The next contender starts once this one's pods are gone, not while they are deleted.
	defer deleteNamespace(b.cs, ns)
	if err := waitMutates(ctx, b.cs, ns, c.mutates); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	pid, apiPid := 0, b.s.Pid(controlplane.APIServerProcess)
	if c.process != "" {
		if pid = b.s.Pid(c.process); pid == 0 {
			return fmt.Errorf("%s: its process %s does not run", c.name, c.process)
		}
	}
	cpu := func(p int) float64 {
		if p == 0 {
			return 0
		}
		v, _ := controlplane.CPUSeconds(p)
		return v
	}
	hooksBefore, err := scrapeWebhooks(ctx, b.cs)
	if err != nil {
		return err
	}
	cpuBefore, apiBefore := cpu(pid), cpu(apiPid)
	opensBefore, err := passiveOpens()
	if err != nil {
		return err
	}
	type outcome struct {
		d   time.Duration
		pod *corev1.Pod
		err error
	}
	outcomes := make([][]outcome, vus)
	var wg sync.WaitGroup
	start := time.Now()
	for v := 0; v < vus; v++ {
		wg.Add(1)
		go func(v int) {
			defer wg.Done()
			for i := 0; i < iterations; i++ {
				t := time.Now()
				pod, err := fast.CoreV1().Pods(ns).Create(ctx, loopPod(fmt.Sprintf("vu%d-%d", v, i)), metav1.CreateOptions{})
				outcomes[v] = append(outcomes[v], outcome{time.Since(t), pod, err})
			}
		}(v)
	}
	wg.Wait()
	into.wall += time.Since(start)
	into.cpu += cpu(pid) - cpuBefore
	into.apiCPU += cpu(apiPid) - apiBefore
	opensAfter, err := passiveOpens()
	if err != nil {
		return err
	}
	into.opens += opensAfter - opensBefore
	if pid != 0 {
		if rss, err := controlplane.PeakRSS(pid); err == nil && rss > into.peakRSS {
			into.peakRSS = rss
		}
	}
	hooksAfter, err := scrapeWebhooks(ctx, b.cs)
	if err != nil {
		return err
	}
	into.hooks = into.hooks.add(hooksBefore, hooksAfter)
	if into.sizes == nil {
		into.sizes = map[string]int{}
	}
	for _, vu := range outcomes {
		for _, o := range vu {
			into.creates++
			into.client = append(into.client, o.d)
			if o.err != nil {
				into.errors++
				if into.firstError == "" {
					into.firstError = o.err.Error()
				}
				continue
			}
			size, ok := shmOf(o.pod)
			switch {
			case !ok:
				into.without++
			case size.Cmp(needed) >= 0:
				into.enough++
			default:
				into.short++
			}
			if ok {
				into.sizes[size.String()]++
			}
		}
	}
	return nil
}

// runPeers is admission-latency --peers.
func runPeers(b *bench, peersDir, jsonPath string, vus, iterations, rounds int) error {
	ctx := context.Background()
	cs, err := b.fastClientset()
	if err != nil {
		return err
	}
	cons, err := b.contenders(ctx, peersDir)
	if err != nil {
		return err
	}
	results := make([]loopResult, len(cons))
	for r := 0; r < rounds; r++ {
		for k := range cons {
			i := (k + r) % len(cons)
			start := time.Now()
			if err := b.closedLoop(ctx, cons[i], cs, vus, iterations, &results[i]); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "round %d: %s, %d creates in %.1fs\n", r+1, cons[i].name, vus*iterations, time.Since(start).Seconds())
		}
	}
	fmt.Printf("Closed loop: %d virtual users × %d pod creates each, per contender and round; %d rounds, interleaved; "+
		"annotated 4-GPU pods that need %s of /dev/shm; kube-apiserver %s, every process on loopback on this machine\n\n",
		vus, iterations, rounds, needed.String(), b.s.KubeVersion)
	fmt.Println("| contender | creates/s | client p50 | p99 | max | added p50 | webhook calls per create × the API server's mean | " +
		"CPU s per 1,000 creates: its process, kube-apiserver | TCP connections opened per 1,000 creates | peak RSS | " +
		"/dev/shm ≥ need, smaller, none, errors | sizes given |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	var base time.Duration
	var points []peerPoint
	for i, c := range cons {
		d := results[i].client
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		if c.name == "no webhook" {
			base = pct(d, 0.5)
		}
	}
	for i, c := range cons {
		res := results[i]
		d := res.client
		k := float64(res.creates) / 1000
		var hooks []string
		for name, h := range res.hooks {
			hooks = append(hooks, fmt.Sprintf("%s %.2f × %.2f ms", strings.TrimPrefix(name, "webhook "), h[0]/float64(res.creates), 1000*h[1]/h[0]))
		}
		sort.Strings(hooks)
		if len(hooks) == 0 {
			hooks = []string{"–"}
		}
		var sizes []string
		for s, n := range res.sizes {
			sizes = append(sizes, fmt.Sprintf("%s ×%d", s, n))
		}
		sort.Strings(sizes)
		if len(sizes) == 0 {
			sizes = []string{"–"}
		}
		process, rss := "–", "–"
		if c.process != "" {
			process = fmt.Sprintf("%.2f", res.cpu/k)
			rss = fmt.Sprintf("%.0f MiB", float64(res.peakRSS)/(1<<20))
		}
		fmt.Printf("| %s | %.0f | %s | %s | %s | %s | %s | %s, %.2f | %.0f | %s | %d, %d, %d, %d | %s |\n", c.name,
			float64(res.creates)/res.wall.Seconds(), ms(pct(d, 0.5)), ms(pct(d, 0.99)), ms(d[len(d)-1]),
			ms(pct(d, 0.5)-base), strings.Join(hooks, "; "), process, res.apiCPU/k, res.opens/k, rss,
			res.enough, res.short, res.without, res.errors, strings.Join(sizes, ", "))
		if res.firstError != "" {
			fmt.Fprintf(os.Stderr, "%s: first error: %s\n", c.name, res.firstError)
		}
		points = append(points, peerPoint{Users: vus, Contender: c.name, CreatesPerS: float64(res.creates) / res.wall.Seconds(),
			P50Ms: msf(pct(d, 0.5)), P99Ms: msf(pct(d, 0.99)), AddedP50Ms: msf(pct(d, 0.5) - base),
			CPUPer1000: res.cpu / k, APICPUPer1000: res.apiCPU / k, OpensPer1000: res.opens / k,
			PeakRSSMiB: float64(res.peakRSS) / (1 << 20), Errors: res.errors})
	}
	if jsonPath == "" {
		return nil
	}
	return appendPoints(jsonPath, points)
}

// passiveOpens is the machine's count of TCP connections accepted since boot (/proc/net/snmp,
// Tcp PassiveOpens). Every process of the bench is on this machine's loopback and the API
// server's own clients keep their connections, so its growth over a series is, within a few,
// the connections the API server opened to the contender's webhook: an HTTP/1.1 webhook gets a
// new TLS connection for each concurrent call beyond the 25 idle ones client-go keeps per host
// (k8s.io/client-go transport/cache.go, idleConnsPerHost); an HTTP/2 one, one connection.
func passiveOpens() (float64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = fields
			continue
		}
		for i, name := range names {
			if name == "PassiveOpens" && i < len(fields) {
				var v float64
				_, err := fmt.Sscan(fields[i], &v)
				return v, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/net/snmp has no Tcp PassiveOpens")
}

// fastClientset is the admin's clientset without client-go's default rate limit (5 requests per
// second), so that the virtual users wait only on the API server.
func (b *bench) fastClientset() (*kubernetes.Clientset, error) {
	cfg, err := b.s.RestConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	return kubernetes.NewForConfig(cfg)
}
