package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// auditIn runs `shmguard audit ARGS` from the repository's root, as a CI job in a checkout
// runs it, and returns its standard output and exit code: 0, 1 (findings) or 2 (an input that
// could not be read); anything else fails the test.
func auditIn(t *testing.T, stdin []byte, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command(cp.Shmguard, append([]string{"audit"}, args...)...)
	cmd.Dir = repoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err == nil {
		return stdout.Bytes(), 0
	}
	if errors.As(err, &exit) && exit.ExitCode() <= 2 && stdout.Len() > 0 {
		return stdout.Bytes(), exit.ExitCode()
	}
	t.Fatalf("shmguard audit %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	return nil, 0
}

// sarifLog is the part of a SARIF log these tests read.
type sarifLog struct {
	Runs []struct {
		Results []struct {
			RuleID    string `json:"ruleId"`
			Level     string `json:"level"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region struct {
						StartLine int `json:"startLine"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
			Message struct {
				Text      string   `json:"text"`
				Arguments []string `json:"arguments"`
			} `json:"message"`
			Suppressions []any `json:"suppressions"`
		} `json:"results"`
		Invocations []struct {
			ExecutionSuccessful bool `json:"executionSuccessful"`
		} `json:"invocations"`
	} `json:"runs"`
}

// The SARIF shmguard writes passes the SARIF SDK's validator: the SARIF 2.1.0 JSON schema, the
// SDK's own rules (SARIF1xxx errors, SARIF2xxx warnings) and GitHub code scanning's ingestion
// rules (GHxxxx). Over relative paths, absolute ones (the corpus), stdin, exempted findings and
// an unreadable path.
func TestSarifPassesTheSarifValidator(t *testing.T) {
	dir := t.TempDir()
	outputs := map[string][]byte{}
	write := func(name string, stdin []byte, args ...string) {
		out, _ := auditIn(t, stdin, append([]string{"-o", "sarif"}, args...)...)
		outputs[name] = out
	}
	write("examples", nil, "examples")
	write("linked", nil, "--docs-url", "https://github.com/example/shmguard/blob/v1.0.0/docs/checks.md", "examples")
	write("exempted", nil, "--ignore", "shm-over-memory-limit,ipc-lock-missing", "examples/pod-denied.yaml",
		"examples/pod-needs-patch.yaml", "examples/jobset-multinode.yaml")
	write("stdin", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: t, resources: {limits: {nvidia.com/gpu: 2}}}]}\n---\nkind: [\n"), "-")
	write("unreadable", nil, "examples/pod-denied.yaml", "does-not-exist.yaml")
	if haveCorpus(t, "the corpus's SARIF") {
		write("corpus", nil, corpusDir())
	}
	var files []string
	for name, out := range outputs {
		f := filepath.Join(dir, name+".sarif")
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		// The validator gives up silently on a value outside an enum: check those here.
		var log sarifLog
		if err := json.Unmarshal(out, &log); err != nil || len(log.Runs) != 1 {
			t.Fatalf("%s: not one SARIF run: %v\n%.500s", name, err, out)
		}
		for _, r := range log.Runs[0].Results {
			if r.Level != "error" && r.Level != "warning" && r.Level != "note" {
				t.Errorf("%s: level %q", name, r.Level)
			}
		}
	}
	sort.Strings(files)
	report := filepath.Join(dir, "validation.sarif")
	args := append([]string{"validate"}, files...)
	args = append(args, "--rule-kind", "Sarif;Gh", "--level", "Error;Warning", "--log", "ForceOverwrite", "-o", report)
	validate := exec.Command(cp.Bin("sarif-multitool"), args...)
	// A .NET program: without ICU installed it aborts unless told to use the invariant culture,
	// which is all a validator of JSON needs.
	validate.Env = append(os.Environ(), "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1")
	out, err := validate.CombinedOutput()
	if err != nil {
		t.Fatalf("sarif-multitool validate: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("Done. %d files scanned.", len(files))) {
		t.Fatalf("the validator did not read every file:\n%s", out)
	}
	text, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var validation sarifLog
	if err := json.Unmarshal(text, &validation); err != nil || len(validation.Runs) != 1 {
		t.Fatalf("the validator's report: %v", err)
	}
	for _, inv := range validation.Runs[0].Invocations {
		if !inv.ExecutionSuccessful {
			t.Errorf("the validator's run did not succeed:\n%s", out)
		}
	}
	for _, r := range validation.Runs[0].Results {
		where := ""
		if len(r.Locations) > 0 {
			where = filepath.Base(r.Locations[0].PhysicalLocation.ArtifactLocation.URI)
		}
		// SARIF2005 asks for the tool's informationUri, a web page about it: without --docs-url
		// shmguard knows none (its rules' help names docs/checks.md instead); with it, it has one.
		if r.RuleID == "SARIF2005" && where != "linked.sarif" {
			continue
		}
		t.Errorf("%s %s in %s: %s %v", r.Level, r.RuleID, where, r.Message.Text, r.Message.Arguments)
	}

	// Exempted findings are results with a suppression, not left out.
	var exempted sarifLog
	_ = json.Unmarshal(outputs["exempted"], &exempted)
	suppressed := map[string]bool{}
	for _, r := range exempted.Runs[0].Results {
		if len(r.Suppressions) > 0 {
			suppressed[r.RuleID] = true
		}
	}
	if !suppressed["shm-over-memory-limit"] || !suppressed["ipc-lock-missing"] || suppressed["shm-plan"] {
		t.Errorf("suppressed results: %v, want shm-over-memory-limit and ipc-lock-missing", suppressed)
	}
}

// policyReport is the part of a PolicyReport or Report these tests read.
type policyReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Summary map[string]int `json:"summary"`
	Results []struct {
		Rule      string `json:"rule"`
		Result    string `json:"result"`
		Resources []struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			FieldPath string `json:"fieldPath"`
		} `json:"resources"`
	} `json:"results"`
}

// The policy reports of `shmguard audit -o policyreport` are accepted by the API server as the
// upstream CRDs define them (wgpolicyk8s.io v1alpha2, and openreports.io v1alpha1 with
// --report-api openreports), stored as written, and say of each object what the audit says.
func TestPolicyReportsAreAcceptedByTheAPIServer(t *testing.T) {
	requireCRDs(t)
	ns := newNamespaceNamed(t, "reports", nil)
	// The examples and every kind's fixture, in one namespace: one report for it, and a
	// cluster report for the cluster-scoped objects (a ClusterTrainingRuntime).
	var stream bytes.Buffer
	files, _ := filepath.Glob(filepath.Join(repoRoot, "e2e/testdata/kinds/*.yaml"))
	examples, _ := filepath.Glob(filepath.Join(repoRoot, "examples/*.yaml"))
	kserveMissing := installKServeCRDs(t) // KServe's fixtures, when its CRDs are there
	for _, f := range append(files, examples...) {
		for _, o := range readObjects(t, f) {
			if o.GroupVersionKind().Group == "serving.kserve.io" && kserveMissing != "" {
				continue
			}
			if _, namespaced := resourceFor(t, o); namespaced {
				o.SetNamespace(ns)
			}
			b, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			stream.WriteString("---\n")
			stream.Write(b)
			stream.WriteString("\n")
		}
	}
	records := func() []auditRecord {
		out, _ := auditIn(t, stream.Bytes(), "-o", "json", "-")
		var res struct {
			Records []auditRecord `json:"records"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		return res.Records
	}()
	for _, api := range []struct{ flag, group, namespaced, cluster string }{
		{"wgpolicy", "wgpolicyk8s.io/v1alpha2", "PolicyReport", "ClusterPolicyReport"},
		{"openreports", "openreports.io/v1alpha1", "Report", "ClusterReport"},
	} {
		t.Run(api.flag, func(t *testing.T) {
			out, _ := auditIn(t, stream.Bytes(), "-o", "policyreport", "--report-api", api.flag, "-")
			docs, err := splitDocuments(out)
			if err != nil || len(docs) == 0 {
				t.Fatalf("no reports: %v\n%.500s", err, out)
			}
			kinds := map[string]int{}
			for _, d := range docs {
				kinds[fmt.Sprint(d["kind"])]++
				if d["apiVersion"] != api.group {
					t.Errorf("a report of apiVersion %v", d["apiVersion"])
				}
			}
			if kinds[api.namespaced] != 1 || kinds[api.cluster] != 1 {
				t.Errorf("reports by kind: %v, want one %s and one %s", kinds, api.namespaced, api.cluster)
			}
			// Created as written: the API server validates them against the CRDs' schemas and
			// prunes what they do not define; what comes back must be what was sent.
			created, stderr, err := kubectl(t, out, "create", "-o", "yaml", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl create: %v\n%s", err, stderr)
			}
			t.Cleanup(func() { _, _, _ = kubectl(t, out, "delete", "--ignore-not-found", "-f", "-") })
			stored, err := splitDocuments([]byte(created))
			if err != nil {
				t.Fatal(err)
			}
			var items []map[string]any
			for _, s := range stored {
				if list, ok := s["items"].([]any); ok {
					for _, i := range list {
						items = append(items, i.(map[string]any))
					}
				} else {
					items = append(items, s)
				}
			}
			if len(items) != len(docs) {
				t.Fatalf("%d reports sent, %d stored", len(docs), len(items))
			}
			for i := range docs {
				if diff := missingFrom(docs[i], items[i], ""); len(diff) > 0 {
					t.Errorf("%s %v: the API server dropped or changed %v", docs[i]["kind"], docs[i]["metadata"], diff)
				}
			}
			// Each object's results are its findings that are warnings or errors (a "pass"
			// when it has none), and the summary counts them.
			var reports []policyReport
			for _, d := range docs {
				b, _ := json.Marshal(d)
				var r policyReport
				_ = json.Unmarshal(b, &r)
				reports = append(reports, r)
			}
			byObject := map[string][]string{}
			for _, r := range reports {
				counted := map[string]int{}
				for _, res := range r.Results {
					counted[res.Result]++
					for _, o := range res.Resources {
						byObject[o.Kind+"/"+o.Name] = append(byObject[o.Kind+"/"+o.Name], res.Result+" "+res.Rule)
					}
				}
				for result, n := range r.Summary {
					if counted[result] != n {
						t.Errorf("%s: summary says %d %s, results hold %d", r.Kind, n, result, counted[result])
					}
				}
			}
			for _, rec := range records {
				if rec.Kind == "" || rec.first("not-a-workload") != "" {
					continue // no report for what is not a workload
				}
				var want []string
				for _, f := range rec.Findings {
					switch {
					case f.Suppressed:
						want = append(want, "skip "+f.ID)
					case f.Severity == "error":
						want = append(want, "fail "+f.ID)
					case f.Severity == "warning":
						want = append(want, "warn "+f.ID)
					}
				}
				if len(want) == 0 {
					want = []string{"pass shmguard"}
				}
				got := byObject[rec.Kind+"/"+rec.Name]
				if strings.Join(got, ", ") != strings.Join(want, ", ") {
					t.Errorf("%s %s: the report says %v, the audit %v", rec.Kind, rec.Name, got, want)
				}
			}
			// Every result of a finding points at its field, as the audit's pointer does.
			fieldPaths := 0
			for _, r := range reports {
				for _, res := range r.Results {
					for _, o := range res.Resources {
						if o.FieldPath != "" {
							fieldPaths++
						}
					}
				}
			}
			if fieldPaths == 0 {
				t.Error("no result names a fieldPath")
			}
		})
	}
}
