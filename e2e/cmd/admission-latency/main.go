// Command admission-latency measures shmguard as the API server sees it: it creates N GPU pods
// one after another on the control plane of package controlplane, first with shmguard's
// webhooks registered, then without them, and prints the API server's own histograms —
// apiserver_admission_webhook_admission_duration_seconds for shmguard's webhooks and
// apiserver_request_duration_seconds for pod creates — as p50 and p99, beside the latency the
// client measured for each create. bench/apiserver-latency.sh runs it.
//
//	admission-latency --dir DIR [--pods 1000]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
)

func main() {
	dir := flag.String("dir", "", "the control plane's state directory")
	pods := flag.Int("pods", 1000, "GPU pods to create in each round")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: admission-latency --dir DIR [--pods N]")
		os.Exit(2)
	}
	if err := run(*dir, *pods); err != nil {
		fmt.Fprintf(os.Stderr, "admission-latency: %v\n", err)
		os.Exit(1)
	}
}

// histogram is a Prometheus histogram's cumulative buckets (upper bound -> count).
type histogram map[float64]float64

// scrape reads the API server's /metrics and sums the buckets of name over the series whose
// labels contain every one of match.
func scrape(cs *kubernetes.Clientset, name string, match ...string) (histogram, error) {
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return nil, err
	}
	h := histogram{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_bucket{") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.Index(line[i+4:], `"`)
		le, err := strconv.ParseFloat(line[i+4:i+4+j], 64)
		if err != nil {
			le = math.Inf(1)
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		h[le] += v
	}
	return h, sc.Err()
}

// quantile estimates the q-quantile of after-before as Prometheus' histogram_quantile does:
// linear interpolation inside the bucket that holds it; it also returns that bucket's upper
// bound (the API server's buckets are coarse: 5, 25, 50, 100 ms ...) and the sample count.
func quantile(q float64, before, after histogram) (float64, float64, float64) {
	var bounds []float64
	for le := range after {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	if total == 0 {
		return math.NaN(), math.NaN(), 0
	}
	rank := q * total
	lower, prev := 0.0, 0.0
	for _, le := range bounds {
		count := after[le] - before[le]
		if count >= rank {
			if math.IsInf(le, 1) {
				return lower, le, total
			}
			return lower + (le-lower)*(rank-prev)/(count-prev), le, total
		}
		lower, prev = le, count
	}
	return lower, math.Inf(1), total
}

// createPods creates n GPU pods in ns one after another and returns each create's latency.
func createPods(cs *kubernetes.Clientset, ns string, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		pod := controlplane.GPUPod(fmt.Sprintf("gpu-%d", i), 4, "96Gi")
		start := time.Now()
		if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out, nil
}

func pct(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }

type round struct {
	name              string
	client            []time.Duration
	request, webhooks [2][2]float64 // p50, p99: estimate and bucket bound, seconds
	webhookCalls      float64
}

func measure(cs *kubernetes.Clientset, name string, n int) (round, error) {
	r := round{name: name}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "latency-"}}, metav1.CreateOptions{})
	if err != nil {
		return r, err
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	for { // pods are refused until the namespace's default service account exists
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(context.Background(), "default", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	const req = "apiserver_request_duration_seconds"
	const hook = "apiserver_admission_webhook_admission_duration_seconds"
	reqMatch := []string{`dry_run=""`, `verb="POST"`, `resource="pods"`, `subresource=""`}
	reqBefore, err := scrape(cs, req, reqMatch...)
	if err != nil {
		return r, err
	}
	hookBefore, err := scrape(cs, hook, `.shmguard.io"`)
	if err != nil {
		return r, err
	}
	if r.client, err = createPods(cs, ns.Name, n); err != nil {
		return r, err
	}
	reqAfter, _ := scrape(cs, req, reqMatch...)
	hookAfter, _ := scrape(cs, hook, `.shmguard.io"`)
	for i, q := range []float64{0.5, 0.99} {
		r.request[i][0], r.request[i][1], _ = quantile(q, reqBefore, reqAfter)
		r.webhooks[i][0], r.webhooks[i][1], r.webhookCalls = quantile(q, hookBefore, hookAfter)
	}
	return r, nil
}

func ms(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", s*1000)
}

// est writes a histogram quantile as its estimate and the bucket that holds it.
func est(v [2]float64) string {
	if math.IsNaN(v[0]) {
		return "-"
	}
	return fmt.Sprintf("%s (≤ %.0f ms)", ms(v[0]), v[1]*1000)
}

func run(dir string, n int) error {
	s, err := controlplane.Load(dir)
	if err != nil {
		return err
	}
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	ctx := context.Background()
	with, err := measure(cs, "with shmguard's webhooks", n)
	if err != nil {
		return err
	}
	if err := s.UnregisterWebhooks(ctx); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the API server's webhook informer catches up
	without, err := measure(cs, "without them", n)
	if rerr := s.RegisterWebhooks(ctx); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("%d GPU pod creates per round, one at a time, kube-apiserver %s\n\n", n, s.KubeVersion)
	fmt.Println("| round | pod create p50 / p99 (apiserver_request_duration_seconds) | client p50 / p99 | shmguard webhook calls | webhook p50 / p99 (apiserver_admission_webhook_admission_duration_seconds) |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range []round{with, without} {
		fmt.Printf("| %s | %s / %s | %s / %s | %.0f | %s / %s |\n", r.name, est(r.request[0]), est(r.request[1]),
			ms(pct(r.client, 0.5).Seconds()), ms(pct(r.client, 0.99).Seconds()), r.webhookCalls,
			est(r.webhooks[0]), est(r.webhooks[1]))
	}
	return nil
}
