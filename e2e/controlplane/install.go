// shmguard on the node: installed as a cluster operator installs it without cert-manager, with
// scripts/install-without-cert-manager.sh's certificate and `helm install charts/shmguard`, from
// the image built from the project's Dockerfile. The API server then calls it through its
// Service.
package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// RepoRoot is the checkout the chart belongs to.
func (s *State) RepoRoot() string { return filepath.Dir(filepath.Dir(s.Chart)) }

// HostIPCNamespacePrefix names the namespaces whose policy rule keeps the patch of releases
// before 0.2 (hostIPC: always, ipcLock: always): what a cluster that relied on it sets.
const HostIPCNamespacePrefix = "hostipc-"

// HelmValueArgs are the values shmguard is installed with on the node, as helm's flags: the
// built images, the certificate of install-without-cert-manager.sh instead of cert-manager's, the
// agent reading the device checkpoint and allowed to delete leaked segments where a pod asks
// (which takes its exact mode; the node suite runs the default status mode beside it), and the
// chart's policy namespaces with one rule added for HostIPCNamespacePrefix.
func (s *State) HelmValueArgs() ([]string, error) {
	secret, err := s.tlsSecret()
	if err != nil {
		return nil, err
	}
	repo, tag := ImageTag(s.Node.Images["SHMGUARD_WEBHOOK_IMAGE"])
	agentRepo, agentTag := ImageTag(s.Node.Images["SHMGUARD_AGENT_IMAGE"])
	var args []string
	for _, v := range []string{
		"image.repository=" + repo, "image.tag=" + tag, "image.pullPolicy=Never",
		"agent.image.repository=" + agentRepo, "agent.image.tag=" + agentTag,
		"certManager.enabled=false", "tls.secretName=" + secret.Name,
		"tls.caBundle=" + base64.StdEncoding.EncodeToString(secret.Data["ca.crt"]),
		"agent.deviceCheckpoint=true", "agent.leakedSegments=exact", "agent.reclaimLeakedSegments=true",
	} {
		args = append(args, "--set", v)
	}
	namespaces := `[{"match":["kube-*","` + ReleaseNamespace + `"],"mode":"off"},` +
		`{"match":["` + HostIPCNamespacePrefix + `*"],"mode":"warn","hostIPC":"always","ipcLock":"always"},` +
		`{"match":["*"],"mode":"warn"}]`
	return append(args, "--set-json", "policy.namespaces="+namespaces), nil
}

// tlsSecret is the Secret install-without-cert-manager.sh wrote.
func (s *State) tlsSecret() (*corev1.Secret, error) {
	b, err := os.ReadFile(s.Path("shmguard-install", "45-secret-tls.yaml"))
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := yaml.Unmarshal(b, secret); err != nil {
		return nil, err
	}
	return secret, nil
}

// installShmguard makes the certificate, creates the release's namespace and Secret, and runs
// `helm install --wait`.
func (s *State) installShmguard(ctx context.Context) error {
	script := filepath.Join(s.RepoRoot(), "scripts", "install-without-cert-manager.sh")
	if out, err := exec.CommandContext(ctx, script, "--output", s.Path("shmguard-install")).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", script, err, out)
	}
	if out, err := s.Run(nil, "kubectl", "create", "namespace", ReleaseNamespace); err != nil {
		return fmt.Errorf("kubectl create namespace: %v: %s", err, out)
	}
	if out, err := s.Run(nil, "kubectl", "apply", "-f", s.Path("shmguard-install", "45-secret-tls.yaml")); err != nil {
		return fmt.Errorf("kubectl apply the Secret: %v: %s", err, out)
	}
	values, err := s.HelmValueArgs()
	if err != nil {
		return err
	}
	args := append([]string{"install", ReleaseName, s.Chart, "--namespace", ReleaseNamespace, "--wait", "--timeout", "3m"},
		values...)
	if out, err := s.Run(nil, "helm", args...); err != nil {
		return fmt.Errorf("helm install: %v: %s", err, out)
	}
	return nil
}
