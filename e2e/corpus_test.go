package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// droppedPaths are the places of want the stored object lacks (missingFrom without the values).
func droppedPaths(want, got map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, d := range missingFrom(want, got, "") {
		out[d[:strings.Index(d, ":")]] = true
	}
	return out
}

// Every real workload of the corpus, annotated for sizing, goes through `shmguard audit -o
// patched`; the API server (dry run, with the upstream CRDs) must accept the patched object
// whenever it accepts the original, and store every field the patch wrote: custom resources
// silently lose the fields their schema does not define.
func TestCorpusPatchesSurviveTheAPIServer(t *testing.T) {
	requireCRDs(t)
	if !haveCorpus(t, "the whole test") {
		t.SkipNow()
	}
	ns := newNamespace(t, nil)
	var items []any
	for _, o := range manifestsUnder(t, corpusDir()) {
		u := &unstructured.Unstructured{Object: o}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || strings.HasSuffix(u.GetKind(), "List") {
			continue
		}
		if _, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version); err != nil {
			continue // a kind this API server does not serve
		}
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["shmguard.io/num-workers"], a["shmguard.io/batch-bytes"] = "4", "16Mi"
		u.SetAnnotations(a)
		u.SetName(fmt.Sprintf("corpus-%d", len(items)))
		u.SetGenerateName("")
		u.SetNamespace("")
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(u.Object, "status")
		items = append(items, u.Object)
	}
	list, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	records := audit(t, list, "-")
	patchedOut, _ := runShmguard(t, list, "audit", "-o", "patched", "--config", cp.ShmguardPolicy(), "-")
	patchedDocs := parseObjects(t, []byte(patchedOut))
	if len(patchedDocs) != 1 {
		t.Fatalf("shmguard audit -o patched of a List: %d documents", len(patchedDocs))
	}
	patchedItems, _, _ := unstructured.NestedSlice(patchedDocs[0].Object, "items")
	if len(patchedItems) != len(items) || len(records) != len(items) {
		t.Fatalf("%d objects, %d patched items, %d records", len(items), len(patchedItems), len(records))
	}
	checked, bothRefused := 0, 0
	for i := range items {
		if records[i].Verdict != "patch" {
			continue
		}
		original := &unstructured.Unstructured{Object: items[i].(map[string]any)}
		patched := &unstructured.Unstructured{Object: patchedItems[i].(map[string]any)}
		name := fmt.Sprintf("%s %s (%s)", original.GetKind(), original.GetName(), records[i].File)
		storedOriginal, _, errOriginal := createObject(t, ns, original, true)
		storedPatched, _, errPatched := createObject(t, ns, patched, true)
		switch {
		case errOriginal != nil && errPatched != nil:
			bothRefused++ // invalid as published (placeholders, missing fields)
			continue
		case errPatched != nil:
			t.Errorf("%s: the API server accepts the original but refuses the patched object: %v", name, statusMessage(errPatched))
			continue
		}
		before := map[string]bool{}
		if errOriginal == nil {
			before = droppedPaths(original.Object, storedOriginal.Object)
		}
		for path := range droppedPaths(patched.Object, storedPatched.Object) {
			if !before[path] {
				t.Errorf("%s: the API server dropped %s, which shmguard's patch wrote", name, path)
			}
		}
		checked++
	}
	t.Logf("%d objects of served kinds, %d patched and checked, %d invalid as published", len(items), checked, bothRefused)
	if checked < 60 {
		t.Errorf("only %d patched objects checked against the API server", checked)
	}
}
