// Command admission-latency measures GPU pod creates as the API server sees them, with five
// registrations of admission webhooks or policies on the control plane of package controlplane:
//
//   - shmguard as the chart registers it (its mutating and validating configurations);
//   - shmguard's /mutate alone (the chart's mutating configuration only);
//   - the Go peer (bench/load/gopeer) as the only mutating webhook, with the chart's rules,
//     namespaceSelector and matchConditions;
//   - shmguard's policy mode: `shmguard policy export` of the webhook's policy file, no webhook;
//   - no webhook.
//
// Each round creates, for each registration in turn, warm-up pods and then N annotated 4-GPU
// pods one after another; the registrations take turns in every round and their order rotates,
// so a slow minute of this shared machine falls on all of them. It prints, per registration and
// over all rounds, the client's create latency (p50, p90, p99, exact) and, per webhook, the API
// server's own count and mean duration of its calls
// (apiserver_admission_webhook_admission_duration_seconds); per admission policy, the count and
// mean of its evaluations (apiserver_{mutating,validating}_admission_policy_check_duration_seconds:
// for a mutating policy, its CEL and the patch applied) and of the admission plugin that runs them
// (apiserver_admission_controller_admission_duration_seconds: with the matching and the object's
// conversion to and from its versioned form). bench/apiserver-latency.sh runs it.
//
//	admission-latency --dir DIR --gopeer BIN [--pods 500] [--warmup 20] [--rounds 2]
//	admission-latency --dir DIR --gopeer BIN --peers DIR [--vus 100] [--iterations 20] [--rounds 2] [--json FILE]
//	admission-latency --plot FILE --png OUT [--title TEXT]
//
// With --peers, the contenders are shmguard and the admission engines users would pick instead,
// in a closed loop (peers.go; bench/peers.sh); --json appends their figures as JSON lines, which
// --plot draws (peers_plot.go).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
)

func main() {
	dir := flag.String("dir", "", "the control plane's state directory")
	gopeer := flag.String("gopeer", "", "the Go peer's binary (bench/load/gopeer)")
	pods := flag.Int("pods", 500, "GPU pods to create per registration and round")
	warmup := flag.Int("warmup", 20, "creates before each measured series, not counted")
	rounds := flag.Int("rounds", 2, "rounds; each registration takes a turn in every round")
	before := flag.String("policy-before", "", "another shmguard binary: its policy export is one more registration")
	peersDir := flag.String("peers", "", "scripts/build-tools.sh --peers's directory: compare with Kyverno and Gatekeeper in a closed loop instead")
	vus := flag.Int("vus", 100, "with --peers: virtual users, each creating pods one after another")
	iterations := flag.Int("iterations", 20, "with --peers: creates per virtual user, per contender and round")
	jsonPath := flag.String("json", "", "with --peers: append each contender's figures to this file as JSON lines")
	plotFrom := flag.String("plot", "", "draw the JSON lines of --json in this file to --png, and do nothing else")
	png := flag.String("png", "", "with --plot: the PNG to write")
	title := flag.String("title", "shmguard, Kyverno and Gatekeeper", "with --plot: the plot's title")
	flag.Parse()
	if *plotFrom != "" {
		points, err := readPoints(*plotFrom)
		if err == nil {
			err = plotPeers(points, *title, *png)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "admission-latency: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" || *gopeer == "" || *pods < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: admission-latency --dir DIR --gopeer BIN [--pods N] [--warmup N] [--rounds N]")
		os.Exit(2)
	}
	if err := run(*dir, *gopeer, *before, *peersDir, *jsonPath, *pods, *warmup, *rounds, *vus, *iterations); err != nil {
		fmt.Fprintf(os.Stderr, "admission-latency: %v\n", err)
		os.Exit(1)
	}
}

// peerConfig is the name of the Go peer's MutatingWebhookConfiguration.
const peerConfig = "shmguard-bench-gopeer"

// registration is one way of registering webhooks: apply makes it the only one.
type registration struct {
	name  string
	apply func(ctx context.Context) error
}

type bench struct {
	s        *controlplane.State
	cs       *kubernetes.Clientset
	dyn      dynamic.Interface
	peerHook *admissionv1.MutatingWebhookConfiguration
	policies []*unstructured.Unstructured // shmguard policy export's objects
	before   []*unstructured.Unstructured // --policy-before's, with the same names
	// With --peers: the peers' policies (bench/peers/), deleted by clear with the peers stopped.
	peerPolicies []*unstructured.Unstructured
}

// policyResources are the admission policy kinds' resources.
var policyResources = map[string]string{
	"MutatingAdmissionPolicy": "mutatingadmissionpolicies", "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
	"ValidatingAdmissionPolicy": "validatingadmissionpolicies", "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
}

// exportPolicies reads `shmguard policy export` of the webhook's own policy file, as `binary`
// writes it.
func exportPolicies(s *controlplane.State, binary string) ([]*unstructured.Unstructured, error) {
	out, err := exec.Command(binary, "policy", "export", "--config", s.ShmguardPolicy()).Output()
	if err != nil {
		return nil, fmt.Errorf("shmguard policy export: %w", err)
	}
	return controlplane.ParseObjects(out)
}

// clear deletes every webhook configuration this bench registers.
func (b *bench) clear(ctx context.Context) error {
	if err := b.s.UnregisterWebhooks(ctx); err != nil {
		return err
	}
	err := b.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, peerConfig, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for _, u := range b.policies {
		err := b.policyClient(u).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if b.peerPolicies != nil {
		return b.clearPeers(ctx)
	}
	return nil
}

func (b *bench) policyClient(u *unstructured.Unstructured) dynamic.ResourceInterface {
	return b.dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
		Resource: policyResources[u.GetKind()]})
}

func (b *bench) registrations() []registration {
	out := []registration{
		{"shmguard, as the chart registers it", func(ctx context.Context) error {
			if err := b.clear(ctx); err != nil {
				return err
			}
			return b.s.RegisterWebhooks(ctx)
		}},
		{"shmguard, /mutate only", func(ctx context.Context) error {
			if err := b.clear(ctx); err != nil {
				return err
			}
			m, _, err := b.s.WebhookConfigurations()
			if err != nil {
				return err
			}
			_, err = b.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{})
			return err
		}},
		{"Go peer, mutate only", func(ctx context.Context) error {
			if err := b.clear(ctx); err != nil {
				return err
			}
			_, err := b.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, b.peerHook.DeepCopy(),
				metav1.CreateOptions{})
			return err
		}},
		{"shmguard's policy mode, no webhook", func(ctx context.Context) error { return b.applyPolicies(ctx, b.policies) }},
		{"no webhook", b.clear},
	}
	if b.before != nil {
		out = append(out, registration{"policy mode as --policy-before exports it",
			func(ctx context.Context) error { return b.applyPolicies(ctx, b.before) }})
	}
	return out
}

// applyPolicies makes `policies` the only registration.
func (b *bench) applyPolicies(ctx context.Context, policies []*unstructured.Unstructured) error {
	if err := b.clear(ctx); err != nil {
		return err
	}
	for _, u := range policies {
		if _, err := b.policyClient(u).Create(ctx, u.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// peerRegistration is the chart's mutating webhook for pods, pointed at the Go peer.
func peerRegistration(s *controlplane.State, port int) (*admissionv1.MutatingWebhookConfiguration, error) {
	m, _, err := s.WebhookConfigurations()
	if err != nil {
		return nil, err
	}
	for _, w := range m.Webhooks {
		for _, r := range w.Rules {
			for _, res := range r.Resources {
				if res != "pods" {
					continue
				}
				url := fmt.Sprintf("https://127.0.0.1:%d/mutate", port)
				w.Name = "gopeer.bench.shmguard.io"
				w.ClientConfig.URL = &url
				return &admissionv1.MutatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: peerConfig},
					Webhooks:   []admissionv1.MutatingWebhook{w},
				}, nil
			}
		}
	}
	return nil, fmt.Errorf("the chart's MutatingWebhookConfiguration has no webhook for pods")
}

// webhookStats is the API server's count and total seconds of each webhook's calls, each admission
// policy's evaluations and each admission plugin's runs, by "webhook NAME", "policy NAME" and
// "plugin NAME".
type webhookStats map[string][2]float64

// scraped are the histograms read: the metric, the label that names what was timed, and the
// prefix its key gets.
var scraped = []struct{ metric, label, prefix string }{
	{"apiserver_admission_webhook_admission_duration_seconds", "name", "webhook "},
	{"apiserver_mutating_admission_policy_check_duration_seconds", "policy", "policy "},
	{"apiserver_validating_admission_policy_check_duration_seconds", "policy", "policy "},
	{"apiserver_admission_controller_admission_duration_seconds", "name", "plugin "},
}

// scrapeWebhooks reads the _count and _sum of each histogram of `scraped` from the API server's
// /metrics; of the admission plugins, only the two that run admission policies.
func scrapeWebhooks(ctx context.Context, cs *kubernetes.Clientset) (webhookStats, error) {
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := webhookStats{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range scraped {
			field := -1
			switch {
			case strings.HasPrefix(line, m.metric+"_count{"):
				field = 0
			case strings.HasPrefix(line, m.metric+"_sum{"):
				field = 1
			default:
				continue
			}
			i := strings.Index(line, m.label+`="`)
			if i < 0 {
				continue
			}
			name := line[i+len(m.label)+2:]
			name = name[:strings.IndexByte(name, '"')]
			if m.prefix == "plugin " && !strings.HasSuffix(name, "AdmissionPolicy") {
				continue
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", line, err)
			}
			s := out[m.prefix+name]
			s[field] += v
			out[m.prefix+name] = s
		}
	}
	return out, sc.Err()
}

// series is what one registration measured, over every round.
type series struct {
	client []time.Duration
	hooks  webhookStats // calls and seconds during the measured creates
}

func (b *bench) measure(ctx context.Context, reg registration, pods, warmup int, into *series) error {
	if err := reg.apply(ctx); err != nil {
		return fmt.Errorf("registering %s: %w", reg.name, err)
	}
	time.Sleep(2 * time.Second) // the API server's webhook informer catches up; the warm-up covers the rest
	ns, err := controlplane.NewNamespace(ctx, b.cs, "latency", nil)
	if err != nil {
		return err
	}
	defer b.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	create := func(name string) (time.Duration, error) {
		pod := controlplane.GPUPod(name, 4, "96Gi")
		pod.Annotations = map[string]string{"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "64Mi"}
		start := time.Now()
		_, err := b.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return time.Since(start), err
	}
	for i := 0; i < warmup; i++ {
		if _, err := create(fmt.Sprintf("warmup-%d", i)); err != nil {
			return err
		}
	}
	before, err := scrapeWebhooks(ctx, b.cs)
	if err != nil {
		return err
	}
	for i := 0; i < pods; i++ {
		d, err := create(fmt.Sprintf("gpu-%d", i))
		if err != nil {
			return err
		}
		into.client = append(into.client, d)
	}
	after, err := scrapeWebhooks(ctx, b.cs)
	if err != nil {
		return err
	}
	into.hooks = into.hooks.add(before, after)
	return nil
}

// add is w plus what each webhook, policy and plugin did between two scrapes.
func (w webhookStats) add(before, after webhookStats) webhookStats {
	if w == nil {
		w = webhookStats{}
	}
	for name, a := range after {
		d := [2]float64{a[0] - before[name][0], a[1] - before[name][1]}
		if d[0] > 0 {
			s := w[name]
			w[name] = [2]float64{s[0] + d[0], s[1] + d[1]}
		}
	}
	return w
}

func pct(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", msf(d)) }

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func run(dir, gopeer, before, peersDir, jsonPath string, pods, warmup, rounds, vus, iterations int) error {
	s, err := controlplane.Load(dir)
	if err != nil {
		return err
	}
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	ctx := context.Background()
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	peer := exec.Command(gopeer, "--cert", s.WebhookCert(), "--key", s.WebhookKey(), "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	peer.Stderr = os.Stderr
	if err := peer.Start(); err != nil {
		return err
	}
	defer func() { _ = peer.Process.Kill(); _ = peer.Wait() }()
	cfg, err := s.RestConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b := &bench{s: s, cs: cs, dyn: dyn}
	if b.policies, err = exportPolicies(s, s.Shmguard); err != nil {
		return err
	}
	if before != "" {
		if b.before, err = exportPolicies(s, before); err != nil {
			return err
		}
	}
	if b.peerHook, err = peerRegistration(s, port); err != nil {
		return err
	}
	// Whatever happens, the control plane is left with the chart's registration, as it was.
	defer func() {
		if err := b.clear(ctx); err == nil {
			_ = s.RegisterWebhooks(ctx)
		}
	}()
	if peersDir != "" {
		return runPeers(b, peersDir, jsonPath, vus, iterations, rounds)
	}
	regs := b.registrations()
	results := make([]series, len(regs))
	for r := 0; r < rounds; r++ {
		for k := range regs {
			i := (k + r) % len(regs)
			start := time.Now()
			if err := b.measure(ctx, regs[i], pods, warmup, &results[i]); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "round %d: %s, %d creates in %.1fs\n", r+1, regs[i].name, pods, time.Since(start).Seconds())
		}
	}
	fmt.Printf("%d annotated 4-GPU pod creates per registration and round, one at a time, after %d warm-up creates; "+
		"%d rounds, interleaved; kube-apiserver %s\n\n", pods, warmup, rounds, s.KubeVersion)
	fmt.Println("| registered | client p50 | p90 | p99 | calls per create, and the API server's mean per call: webhooks, admission policies, the plugins running them |")
	fmt.Println("|---|---|---|---|---|")
	for i, reg := range regs {
		c := results[i].client
		sort.Slice(c, func(a, b int) bool { return c[a] < c[b] })
		var names []string
		for name := range results[i].hooks {
			names = append(names, name)
		}
		sort.Strings(names)
		var hooks []string
		for _, name := range names {
			h := results[i].hooks[name]
			hooks = append(hooks, fmt.Sprintf("%s %.2f × %.2f ms", name, h[0]/float64(len(c)), 1000*h[1]/h[0]))
		}
		if len(hooks) == 0 {
			hooks = []string{"–"}
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", reg.name, ms(pct(c, 0.5)), ms(pct(c, 0.9)), ms(pct(c, 0.99)),
			strings.Join(hooks, "; "))
	}
	return nil
}
