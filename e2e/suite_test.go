// Package e2e checks shmguard in front of a real kube-apiserver: the control plane that
// scripts/control-plane.sh brings up (package controlplane), found through
// $SHMGUARD_CONTROL_PLANE_DIR. Every test makes its own namespaces; the tests run one after
// another because some of them restart shmguard or re-register its webhooks.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

var (
	cp     *controlplane.State
	client *kubernetes.Clientset
	mapper meta.RESTMapper
	// The repository's root, for examples/, README.md and the chart.
	repoRoot = func() string { d, _ := filepath.Abs(".."); return d }()
)

// ControlPlaneDir is where scripts/control-plane.sh keeps its state.
func ControlPlaneDir() string {
	if d := os.Getenv("SHMGUARD_CONTROL_PLANE_DIR"); d != "" {
		return d
	}
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "shmguard-control-plane")
}

func TestMain(m *testing.M) {
	dir := ControlPlaneDir()
	if !controlplane.Running(dir) {
		fmt.Fprintf(os.Stderr, "e2e: no control plane running in %s: start one with scripts/control-plane.sh up\n", dir)
		os.Exit(1)
	}
	var err error
	if cp, err = controlplane.Load(dir); err == nil {
		client, err = cp.Clientset()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClient(client.RESTClient())))
	os.Exit(m.Run())
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var nsSuffix = regexp.MustCompile(`[^a-z0-9-]+`)

// newNamespace creates a namespace with labels for this test, deleted when it ends, and waits
// for its default service account (pods are refused until the controller makes it).
// Its name is e2e-NAME-xxxxx, NAME a short form of the test's name.
func newNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	base := strings.Trim(nsSuffix.ReplaceAllString(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), "-"), "-")
	if len(base) > 12 {
		base = strings.Trim(base[:12], "-")
	}
	return newNamespaceNamed(t, base, labels)
}

// newNamespaceNamed is newNamespace with the name's middle part given.
func newNamespaceNamed(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	ctx := ctxFor(t)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-" + name + "-", Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	eventually(t, 30*time.Second, "the default service account of "+ns.Name, func() error {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return ns.Name
}

// eventually retries f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readObjects reads the objects of a YAML file (relative to e2e/ or absolute).
func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, text)
}

func parseObjects(t *testing.T, text []byte) []*unstructured.Unstructured {
	t.Helper()
	docs, err := controlplane.SplitYAML(text)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		out = append(out, u)
	}
	return out
}

// warnings collects the Warning headers of one client's responses.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// resourceFor maps an object's kind to its resource, and says whether it is namespaced.
func resourceFor(t *testing.T, u *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace
}

// createObject creates u in ns (unless cluster-scoped) and returns what the API server stored
// and the warnings it sent back; the object is deleted when the test ends.
func createObject(t *testing.T, ns string, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, []string, error) {
	t.Helper()
	return createObjectUntil(t, t, ns, u, dryRun)
}

// createObjectUntil is createObject with the object kept until owner (a parent test) ends.
func createObjectUntil(owner, t *testing.T, ns string, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, []string, error) {
	t.Helper()
	cfg, err := cp.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr, namespaced := resourceFor(t, u)
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespaced {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	stored, err := ri.Create(ctxFor(t), u.DeepCopy(), opts)
	if err == nil && !dryRun {
		owner.Cleanup(func() { _ = ri.Delete(context.Background(), stored.GetName(), metav1.DeleteOptions{}) })
	}
	return stored, w.all(), err
}

// getObject reads an object back.
func getObject(t *testing.T, ns string, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	dyn, err := dynamic.NewForConfig(mustRestConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	gvr, namespaced := resourceFor(t, u)
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespaced {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	got, err := ri.Get(ctxFor(t), u.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustRestConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := cp.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runShmguard runs the shmguard binary with stdin and returns its stdout and exit code.
func runShmguard(t testing.TB, stdin []byte, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(cp.Shmguard, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("shmguard %s: %v", strings.Join(args, " "), err)
	}
	if code == 2 {
		t.Fatalf("shmguard %s: exit 2: %s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), code
}

// auditRecord is the part of a `shmguard audit -o json` record these tests read.
type auditRecord struct {
	File      string         `json:"file"`
	Kind      string         `json:"kind"`
	Name      string         `json:"name"`
	Verdict   string         `json:"verdict"`
	Findings  []auditFinding `json:"findings"`
	Required  int64          `json:"required_bytes"`
	Patch     []any          `json:"patch"`
	Namespace string         `json:"namespace"`
	Pods      []struct {
		Label    string `json:"label"`
		Verdict  string `json:"verdict"`
		Required int64  `json:"required_bytes"`
	} `json:"pods"`
}

// auditFinding is a finding of an audit record: its check, severity and words (prefixed with
// its pod's label when the object has several), as the webhook words it too.
type auditFinding struct {
	ID         string `json:"id"`
	Severity   string `json:"severity"`
	Pod        string `json:"pod"`
	Message    string `json:"message"`
	Line       int    `json:"line"`
	Suppressed bool   `json:"suppressed"`
}

// problems are the words of the record's findings that are not exempted and are warnings or
// errors, with the plan a denied pod's denial cites: what /validate sends for the object.
// deniedOnly: those of denied pods alone (what an enforce namespace's denial carries).
func (r auditRecord) problems(deniedOnly bool) []string {
	denied := map[string]bool{}
	for _, p := range r.Pods {
		denied[p.Label] = p.Verdict == "deny"
	}
	if len(r.Pods) == 1 {
		denied[""] = denied[r.Pods[0].Label]
	}
	var out []string
	for _, f := range r.Findings {
		podDenied := denied[f.Pod] || (f.Pod == "" && r.Verdict == "deny")
		switch {
		case f.Suppressed:
		case deniedOnly && (!podDenied || (f.Severity != "error" && f.ID != "shm-plan")):
		case f.Severity == "info" && !(f.ID == "shm-plan" && podDenied):
		default:
			out = append(out, f.Message)
		}
	}
	return out
}

// first is the words of the record's first finding of check `id`, or "".
func (r auditRecord) first(id string) string {
	for _, f := range r.Findings {
		if f.ID == id {
			return f.Message
		}
	}
	return ""
}

// audit runs `shmguard audit -o json` with the policy shmguard serves, over files or stdin.
func audit(t *testing.T, stdin []byte, paths ...string) []auditRecord {
	t.Helper()
	args := append([]string{"audit", "-o", "json", "--config", cp.ShmguardPolicy()}, paths...)
	out, _ := runShmguard(t, stdin, args...)
	var res struct {
		Records []auditRecord `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("shmguard audit: %v\n%s", err, out)
	}
	return res.Records
}

// auditPatched runs `shmguard audit -o patched` with the policy shmguard serves.
func auditPatched(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	out, _ := runShmguard(t, nil, "audit", "-o", "patched", "--config", cp.ShmguardPolicy(), file)
	return parseObjects(t, []byte(out))
}

// missingFrom lists the places where want holds something got does not: every field of want
// must be in got with the same value (got may hold more: the API server's defaults, and items
// it adds to lists of objects). Scalars compare by their text, so a YAML 4 equals the API
// server's quantity "4".
func missingFrom(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, stored %T", path, got)}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s/%s: dropped (want %v)", path, k, compact(w[k])))
				continue
			}
			out = append(out, missingFrom(w[k], gv, path+"/"+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want %v, stored %v", path, compact(w), compact(got))}
		}
		// A list of objects may gain items from the API server (the service account token's
		// volume and mount): each wanted item must be found among the stored ones.
		var out []string
		for i, item := range w {
			if _, isObject := item.(map[string]any); !isObject {
				if len(g) != len(w) || len(missingFrom(item, g[i], "")) > 0 {
					return []string{fmt.Sprintf("%s: want %v, stored %v", path, compact(w), compact(got))}
				}
				continue
			}
			found := false
			for _, candidate := range g {
				if len(missingFrom(item, candidate, "")) == 0 {
					found = true
					break
				}
			}
			if !found {
				out = append(out, fmt.Sprintf("%s/%d: no stored item holds %v (stored %v)", path, i, compact(item), compact(got)))
			}
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: want %v, stored %v", path, want, got)}
		}
		return nil
	}
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// metric sums the samples of a counter on shmguard's /metrics whose labels include labels.
func metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	res, err := http.Get(cp.MetricsURL("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for k, v := range labels {
			if !strings.Contains(line, fmt.Sprintf(`%s="%s"`, k, v)) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// decisionLine is one decision of shmguard's JSON log.
type decisionLine struct {
	Msg       string `json:"msg"`
	Endpoint  string `json:"endpoint"`
	Kind      string `json:"kind"`
	Object    string `json:"object"`
	Operation string `json:"operation"`
	Decision  string `json:"decision"`
	Verdict   string `json:"verdict"`
	Required  string `json:"required"`
}

// decisions are shmguard's logged decisions about objects of namespace ns so far. The log is
// flushed every second, so callers that expect a line wait for it with eventually.
func decisions(t *testing.T, ns string) []decisionLine {
	t.Helper()
	f, err := os.Open(cp.Path("shmguard.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []decisionLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d decisionLine
		if json.Unmarshal(sc.Bytes(), &d) != nil || d.Msg != "admission" {
			continue
		}
		if strings.HasPrefix(d.Object, ns+"/") {
			out = append(out, d)
		}
	}
	return out
}

// statusMessage is the message of an API error, or "".
func statusMessage(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status().Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// kubectl runs the built kubectl against the control plane and returns stdout and stderr.
func kubectl(t *testing.T, stdin []byte, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(cp.Bin("kubectl"), args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig())
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// splitDocuments reads the objects of a YAML or JSON text; documents that do not parse as an
// object are left out.
func splitDocuments(text []byte) ([]map[string]any, error) {
	docs, err := controlplane.SplitYAML(text)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, d := range docs {
		var o map[string]any
		if yaml.Unmarshal(d, &o) == nil && o != nil {
			out = append(out, o)
		}
	}
	return out, nil
}
