package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeLine is the one line of README.md that matches re, as written there.
func readmeLine(t *testing.T, re string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, line := range strings.Split(string(text), "\n") {
		if regexp.MustCompile(re).MatchString(line) {
			found = append(found, line)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md: %d lines match %s, want 1: %q", len(found), re, found)
	}
	return found[0]
}

// shell runs a README command line with bash from the repository's root, with kubectl, helm
// and shmguard on PATH and the control plane's kubeconfig, as a reader who ran
// `eval "$(./scripts/control-plane.sh up)"` would.
func shell(t *testing.T, line string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig(),
		"PATH="+cp.BinDir+":"+filepath.Dir(cp.Shmguard)+":"+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestReadmeDryRunShowsWarnings(t *testing.T) {
	requireCRDs(t)
	create := readmeLine(t, `^for ns in .*; do kubectl create namespace "\$ns"; done`)
	_, stderr, err := shell(t, create)
	if err != nil && strings.Count(stderr, "AlreadyExists") != strings.Count(strings.TrimSpace(stderr), "\n")+1 {
		t.Fatalf("%s: %v\n%s", create, err, stderr)
	}
	for _, ns := range regexp.MustCompile(`for ns in (.*); do`).FindStringSubmatch(create)[1:] {
		for _, name := range strings.Fields(ns) {
			t.Cleanup(func() { _, _, _ = kubectl(t, nil, "delete", "namespace", name, "--wait=false") })
		}
	}

	line := readmeLine(t, `^kubectl apply --dry-run=server -f examples/`)
	stdout, stderr, err := shell(t, line)
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", line, err, stdout, stderr)
	}
	// Every example audit says needs a patch or is denied shows its warning, as the API server
	// relays it from shmguard. `kubectl apply -f examples/` reads the directory's own files, not
	// its subdirectories' (Compose files, the report's cluster dump), which the audit reads too.
	examples := filepath.Join(repoRoot, "examples")
	denied := 0
	for _, rec := range audit(t, nil, examples) {
		if filepath.Dir(rec.File) != examples || rec.Kind == "Compose" || (rec.Verdict != "patch" && rec.Verdict != "deny") {
			continue
		}
		if rec.Verdict == "deny" {
			denied++
		}
		if !strings.Contains(stdout, "(server dry run)") {
			t.Errorf("no server dry run in kubectl's output:\n%s", stdout)
		}
		if plan := rec.first("shm-plan"); rec.Verdict == "deny" && !strings.Contains(stderr, firstWords(plan, 6)) {
			t.Errorf("%s %s: kubectl printed no warning with the audit's plan %q:\n%s", rec.Kind, rec.Name, plan, stderr)
		}
	}
	if !strings.Contains(stderr, "Warning: shmguard: ") {
		t.Errorf("kubectl apply --dry-run=server printed no shmguard warning:\n%s", stderr)
	}
	if denied == 0 {
		t.Errorf("no denied example among examples/'s own files: nothing was checked against kubectl's warnings")
	}
}

// auditTableVerdicts reads the verdict of each object of a `shmguard audit` table, by
// "Kind namespace/name" (cluster-scoped: "Kind name").
func auditTableVerdicts(table string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if line == "" || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "FILE:DOC") {
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 4 {
			out[f[1]+" "+f[2]] = f[3]
		}
	}
	return out
}
