package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// corpusDir is the third-party manifests beside the checkout (SHMGUARD_CORPUS_DIR to move it).
func corpusDir() string {
	if d := os.Getenv("SHMGUARD_CORPUS_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoRoot, "..", "shared", "testdata")
}

// haveCorpus reports whether the corpus is there: a directory with something in it, as a clone
// with ../shared beside it has and a newcomer's lone clone (or an empty directory) has not. When
// it is not, it logs that `part` of the test is skipped, naming the directory.
func haveCorpus(t *testing.T, part string) bool {
	t.Helper()
	entries, err := os.ReadDir(corpusDir())
	if err == nil && len(entries) > 0 {
		return true
	}
	if os.Getenv("SHMGUARD_REQUIRE_SHARED") == "1" {
		t.Fatalf("SHMGUARD_REQUIRE_SHARED=1 but the corpus is not at %s (%s needs it)", corpusDir(), part)
	}
	t.Logf("SKIPPED %s: the corpus is not at %s", part, corpusDir())
	return false
}

// manifestsUnder reads every YAML and JSON document under dir that parses as an object.
func manifestsUnder(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		ext := filepath.Ext(path)
		if ext != ".yaml" && ext != ".yml" && ext != ".json" {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs, err := splitDocuments(text)
		if err != nil {
			return nil // published broken (the audit reports these); nothing to admit
		}
		out = append(out, docs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// podsOf finds the pod templates in an object — any mapping whose spec holds a containers
// list, the object itself for a Pod — and makes each a Pod as its controller would.
func podsOf(v any, out *[]map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if spec, ok := x["spec"].(map[string]any); ok {
			if _, ok := spec["containers"].([]any); ok {
				meta := map[string]any{}
				if m, ok := x["metadata"].(map[string]any); ok {
					for _, k := range []string{"labels", "annotations"} {
						if v, ok := m[k]; ok {
							meta[k] = v
						}
					}
				}
				*out = append(*out, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
				return
			}
		}
		for _, child := range x {
			podsOf(child, out)
		}
	case []any:
		for _, child := range x {
			podsOf(child, out)
		}
	}
}

// Pods written for the edges of the expression: name -> whether it must reach shmguard.
var edgePods = []struct {
	name  string
	pod   string
	sends bool
}{
	{"gpu-in-requests", `{"spec": {"containers": [{"name": "a", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}`, true},
	{"gpu-in-init", `{"spec": {"initContainers": [{"name": "i", "image": "x", "resources": {"limits": {"amd.com/gpu": 1}}}], "containers": [{"name": "a", "image": "x"}]}}`, true},
	{"annotated", `{"metadata": {"annotations": {"shmguard.io/num-workers": "4", "shmguard.io/batch-bytes": "8Mi"}}, "spec": {"containers": [{"name": "a", "image": "x"}]}}`, true},
	{"opted-out", `{"metadata": {"annotations": {"shmguard.io/mode": "skip"}}, "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}`, true},
	{"zero-gpus", `{"spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 0}}}]}}`, true},
	{"other-annotations", `{"metadata": {"annotations": {"team": "a"}, "labels": {"x": "y"}}, "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}}`, false},
	{"other-device", `{"spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"example.com/fpga": 1}}}]}}`, false},
	{"empty-resources", `{"spec": {"containers": [{"name": "a", "image": "x", "resources": {}}], "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}], "hostIPC": true}}`, false},
}

// The webhooks' matchConditions, evaluated by the API server's own CEL over every Pod of the
// examples and the corpus (and every pod template there, as its controller would create it):
// a Pod kept away from shmguard is one shmguard would neither patch, warn about nor deny, even
// under a policy that enforces everywhere and requires annotations.
func TestMatchConditionsKeepAwayOnlyPodsShmguardLeavesAlone(t *testing.T) {
	ns := newNamespace(t, map[string]string{"shmguard.io/enforce": "true"})
	var pods []map[string]any
	for _, e := range edgePods {
		var p map[string]any
		if err := json.Unmarshal([]byte(e.pod), &p); err != nil {
			t.Fatal(err)
		}
		p["apiVersion"], p["kind"] = "v1", "Pod"
		pods = append(pods, p)
	}
	own := len(pods)
	for _, o := range manifestsUnder(t, filepath.Join(repoRoot, "examples")) {
		podsOf(o, &pods)
	}
	examplePods := len(pods) - own
	corpus := haveCorpus(t, "the corpus's pods")
	if corpus {
		for _, o := range manifestsUnder(t, corpusDir()) {
			podsOf(o, &pods)
		}
	}
	refused := map[string]string{}
	undecodable := map[string]bool{}
	for i, p := range pods {
		u := &unstructured.Unstructured{Object: p}
		u.SetName(fmt.Sprintf("mc-%d", i))
		// References to objects this cluster lacks make the API server's own admission plugins
		// (ServiceAccount, RuntimeClass, Priority) refuse a pod before any webhook; shmguard reads
		// none of these fields.
		for _, f := range []string{"serviceAccountName", "serviceAccount", "runtimeClassName", "priorityClassName", "priority"} {
			unstructured.RemoveNestedField(u.Object, "spec", f)
		}
		if _, _, err := createObject(t, ns, u, true); err != nil {
			msg := statusMessage(err)
			refused[u.GetName()] = msg // invalid as published, or denied by shmguard
			// A pod that does not decode reaches no admission at all.
			undecodable[u.GetName()] = strings.Contains(msg, "cannot be handled as a Pod")
		}
	}
	time.Sleep(1500 * time.Millisecond) // shmguard flushes its log every second
	reached := map[string]bool{}
	for _, d := range decisions(t, ns) {
		reached[strings.TrimPrefix(d.Object, ns+"/")] = true
	}
	var keptAway []string
	var items []any
	for i, p := range pods {
		name := fmt.Sprintf("mc-%d", i)
		if i < own {
			if reached[name] != edgePods[i].sends {
				t.Errorf("edge pod %s: reached shmguard %v, want %v", edgePods[i].name, reached[name], edgePods[i].sends)
			}
		}
		if reached[name] || undecodable[name] {
			continue
		}
		keptAway = append(keptAway, name)
		p["metadata"].(map[string]any)["name"] = name
		items = append(items, p)
	}
	stream, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	strict := filepath.Join(t.TempDir(), "strict.yaml")
	if err := os.WriteFile(strict, []byte("namespaces:\n  - {match: [\"*\"], mode: enforce, requireAnnotations: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := runShmguard(t, stream, "audit", "-o", "json", "--config", strict, "-")
	var res struct {
		Records []auditRecord `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if (r.Verdict != "ok" && r.Verdict != "skip") || len(r.Patch) > 0 || len(r.problems(false)) > 0 {
			t.Errorf("pod %s was kept away from shmguard, which would say %s: %q\n(the API server said: %q)", r.Name, r.Verdict, r.problems(false), refused[r.Name])
		}
	}
	if len(res.Records) != len(keptAway) {
		t.Errorf("audited %d of the %d pods kept away", len(res.Records), len(keptAway))
	}
	sort.Strings(keptAway)
	t.Logf("%d pods: %d reached shmguard, %d kept away by matchConditions, %d do not decode as a Pod; %d refused",
		len(pods), len(reached), len(keptAway), countTrue(undecodable), len(refused))
	// examples/ alone has a handful of pods; with the corpus there are well over 50.
	if examplePods < 5 {
		t.Errorf("only %d pods from examples/", examplePods)
	}
	if corpus && len(pods)-own < 50 {
		t.Errorf("only %d pods from the examples and the corpus", len(pods)-own)
	}
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
