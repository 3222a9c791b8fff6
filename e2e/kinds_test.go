package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// registered says, per resource, whether shmguard's webhook configurations mutate it or only
// validate it: the webhooks as the chart renders them decide which kinds are patched.
func registered(t *testing.T) (mutated, validated map[schema.GroupResource]bool) {
	t.Helper()
	m, v, err := cp.WebhookConfigurations()
	if err != nil {
		t.Fatal(err)
	}
	mutated, validated = map[schema.GroupResource]bool{}, map[schema.GroupResource]bool{}
	for _, w := range m.Webhooks {
		for _, r := range w.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					mutated[schema.GroupResource{Group: g, Resource: res}] = true
				}
			}
		}
	}
	for _, w := range v.Webhooks {
		for _, r := range w.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					validated[schema.GroupResource{Group: g, Resource: res}] = true
				}
			}
		}
	}
	return mutated, validated
}

func requireCRDs(t *testing.T) {
	t.Helper()
	if cp.CRDDir == "" {
		if os.Getenv("SHMGUARD_REQUIRE_SHARED") == "1" {
			t.Fatal("SHMGUARD_REQUIRE_SHARED=1 but the control plane has no CRDs (SHMGUARD_CRD_DIR, by default ../shared/crds)")
		}
		t.Skip("SKIPPED: the control plane has no CRDs (none were at SHMGUARD_CRD_DIR, by default ../shared/crds, when it came up)")
	}
}

// joinedWarnings is the text of shmguard's warnings with its prefixes taken off: a reason cut
// into several 120-byte warnings reads whole again.
func joinedWarnings(warns []string) string {
	var parts []string
	for _, w := range warns {
		w = strings.TrimPrefix(w, "shmguard: ")
		w = strings.TrimPrefix(w, "... ")
		parts = append(parts, w)
	}
	return strings.Join(parts, " ")
}

// withoutServerFields is a stored object as a person would apply it again.
func withoutServerFields(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c
}

func TestEveryRegisteredKind(t *testing.T) {
	requireCRDs(t)
	mutated, validated := registered(t)
	// Short names: the README's cluster audit prints a table whose object column is 44 wide.
	warnNS := newNamespaceNamed(t, "kinds", nil)
	enforceNS := newNamespaceNamed(t, "kinds", map[string]string{"shmguard.io/enforce": "true"})
	files, err := filepath.Glob("testdata/kinds/*.yaml")
	if err != nil || len(files) < 28 {
		t.Fatalf("testdata/kinds: %d fixtures (%v)", len(files), err)
	}
	seen := map[schema.GroupResource]bool{}
	// What `shmguard audit` says of each object as the API server stored it, by "Kind ns/name".
	storedVerdicts := map[string]string{}
	parent := t
	kserveMissing := installKServeCRDs(t) // KServe's kinds are registered too
	for _, file := range files {
		sent := readObjects(t, file)[0]
		if sent.GroupVersionKind().Group == "serving.kserve.io" && kserveMissing != "" {
			t.Run(sent.GetKind()+"/"+filepath.Base(file), func(t *testing.T) { t.Skip(kserveMissing) })
			continue
		}
		gvr, _ := resourceFor(t, sent)
		gr := gvr.GroupResource()
		seen[gr] = true
		t.Run(sent.GetKind()+"/"+filepath.Base(file), func(t *testing.T) {
			records := audit(t, nil, file)
			if len(records) != 1 {
				t.Fatalf("shmguard audit %s: %d records", file, len(records))
			}
			rec := records[0]
			switch {
			case mutated[gr]:
				stored, _, err := createObjectUntil(parent, t, warnNS, sent, false)
				if err != nil {
					t.Fatalf("creating %s: %v", file, err)
				}
				// Every field of shmguard's patch survives the API server's pruning.
				expectPatchedLikeAudit(t, file, stored)
				if !strings.Contains(jsonText(stored.Object), "shmguard.io/plan") {
					t.Error("no shmguard.io/plan in the stored object")
				}
				// Applying the stored object again changes nothing.
				before := stored.GetGeneration()
				manifest, _ := json.Marshal(withoutServerFields(stored).Object)
				if _, stderr, err := kubectl(t, manifest, "apply", "--server-side", "--field-manager=e2e-reapply",
					"-n", warnNS, "-f", "-"); err != nil {
					t.Fatalf("kubectl apply --server-side of the stored object: %v\n%s", err, stderr)
				}
				if after := getObject(t, warnNS, stored).GetGeneration(); after != before {
					t.Errorf("applying the stored object again moved metadata.generation from %d to %d", before, after)
				}
				storedVerdicts[objectKey(stored)] = auditVerdictOf(t, auditPatchedText(t, file))
			case validated[gr]:
				if len(rec.Patch) != 0 {
					t.Fatalf("shmguard audit patches a kind the webhooks only validate: %v", rec.Patch)
				}
				stored, warns, err := createObjectUntil(parent, t, warnNS, sent, false)
				if err != nil {
					t.Fatalf("creating %s in a warn namespace: %v", file, err)
				}
				if diff := missingFrom(sent.Object, stored.Object, ""); len(diff) > 0 {
					t.Errorf("the stored object differs from what was sent: %v", diff)
				}
				storedVerdicts[objectKey(stored)] = rec.Verdict
				if strings.Contains(jsonText(stored.Object), "shmguard.io/plan") {
					t.Error("a validated-only kind was patched")
				}
				all := joinedWarnings(warns)
				expected := rec.problems(false)
				for _, r := range expected {
					if !strings.Contains(all, r) {
						t.Errorf("the webhook's warnings lack the audit's %q:\n%q", r, warns)
					}
				}
				if len(expected) == 0 && len(warns) > 0 {
					t.Errorf("warnings for an object audit finds nothing wrong with: %q", warns)
				}
				// In an enforce namespace, what the audit denies is refused with its reasons.
				again := sent.DeepCopy()
				again.SetName(sent.GetName() + "-enforced")
				_, _, err = createObject(t, enforceNS, again, false)
				if rec.Verdict == "deny" {
					msg := statusMessage(err)
					if err == nil || !strings.Contains(msg, "shmguard denied") {
						t.Fatalf("want shmguard's denial in an enforce namespace, got %v", err)
					}
					for _, r := range rec.problems(true) {
						if !strings.Contains(msg, r) {
							t.Errorf("the denial lacks the audit's reason %q:\n%s", r, msg)
						}
					}
				} else if err != nil {
					t.Errorf("refused in an enforce namespace though audit says %s: %v", rec.Verdict, err)
				}
			default:
				t.Fatalf("%s is not registered with shmguard's webhooks", gr)
			}
		})
	}
	// The README's one-line audit of a live cluster reads the objects back as stored and judges
	// them as `shmguard audit` judges the same objects in files.
	t.Run("the README's cluster audit", func(t *testing.T) {
		line := readmeLine(t, `^kubectl get \$\(kubectl api-resources .*\| shmguard audit -$`)
		stdout, stderr, err := shell(t, line)
		if exit, ok := err.(*exec.ExitError); err != nil && (!ok || exit.ExitCode() != 1) {
			t.Fatalf("%s: %v\n%s", line, err, stderr)
		}
		got := auditTableVerdicts(stdout)
		for key, want := range storedVerdicts {
			if len(key) > 44 {
				t.Fatalf("%s: longer than the audit table's object column; shorten the fixture's name", key)
			}
			if got[key] != want {
				t.Errorf("%s: the cluster audit says %q, shmguard audit of the file as stored %q\n%.2000s", key, got[key], want, stdout)
			}
		}
	})
	// Every kind the webhooks name and the API server serves has a fixture here (MXJob has no
	// CRD upstream any more: training-operator dropped it in v1.9).
	for gr := range mutated {
		if !seen[gr] && !notServed(t, gr) && gr.Resource != "pods" { // pods: TestPods
			t.Errorf("no fixture in testdata/kinds for %s", gr)
		}
	}
	for gr := range validated {
		if !seen[gr] && !mutated[gr] && !notServed(t, gr) {
			t.Errorf("no fixture in testdata/kinds for %s", gr)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// objectKey names an object as the audit table does: "Kind namespace/name", or "Kind name".
func objectKey(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// auditPatchedText is `shmguard audit -o patched` of a file, as text.
func auditPatchedText(t *testing.T, file string) []byte {
	t.Helper()
	out, _ := runShmguard(t, nil, "audit", "-o", "patched", "--config", cp.ShmguardPolicy(), file)
	return []byte(out)
}

// auditVerdictOf is the verdict `shmguard audit` gives the one object of a manifest.
func auditVerdictOf(t *testing.T, manifest []byte) string {
	t.Helper()
	records := audit(t, manifest, "-")
	if len(records) != 1 {
		t.Fatalf("shmguard audit: %d records for one object", len(records))
	}
	return records[0].Verdict
}

// notServed reports whether the API server serves no such resource.
func notServed(t *testing.T, gr schema.GroupResource) bool {
	_, err := mapper.KindFor(gr.WithVersion(""))
	return err != nil
}
