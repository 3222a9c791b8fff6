// Package controlplane runs a Kubernetes control plane on loopback for shmguard's end-to-end
// tests and for trying shmguard with kubectl on one machine: etcd, kube-apiserver (PodSecurity,
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook on), kube-controller-manager, and
// `shmguard-webhook`, with the CRDs of every kind shmguard evaluates and shmguard's webhooks
// registered as `helm template charts/shmguard` renders them.
//
// Everything lives in one state directory (State.Dir): certificates, kubeconfigs, etcd's data,
// each process's log and pid. This file holds its layout.
package controlplane

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Ports are the loopback ports of the control plane's processes.
type Ports struct {
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Webhook           int `json:"webhook"` // shmguard's HTTPS port (/mutate, /validate)
	Metrics           int `json:"metrics"` // shmguard's /metrics, /healthz, /readyz
}

// State is a running control plane, as state.json in its directory records it.
type State struct {
	Dir         string `json:"dir"`
	BinDir      string `json:"binDir"`      // etcd, kube-apiserver, kube-controller-manager, kubectl, helm
	Shmguard    string `json:"shmguard"`    // the shmguard binary; shmguard-webhook and -agent beside it
	Chart       string `json:"chart"`       // charts/shmguard
	CRDDir      string `json:"crdDir"`      // the upstream CRDs; "" when they were not found
	KubeVersion string `json:"kubeVersion"` // the API server's gitVersion, e.g. v1.37.2
	Ports       Ports  `json:"ports"`
	// ShmguardArgs are the arguments `shmguard-webhook` runs with: the chart's Deployment's, with
	// files and ports moved to this machine.
	ShmguardArgs []string `json:"shmguardArgs"`
	// Node is the node, when the control plane has one (node.go); shmguard then runs as the
	// chart installs it, not on loopback.
	Node *Node `json:"node,omitempty"`
}

const (
	stateFile = "state.json"
	// ReleaseName and ReleaseNamespace are those `helm template` renders shmguard's objects with.
	ReleaseName      = "shmguard"
	ReleaseNamespace = "shmguard-system"
	// WebhookSelector selects the webhook Deployment's pods in ReleaseNamespace (not the node
	// agents', which the chart can run there too).
	WebhookSelector = "app.kubernetes.io/name=shmguard,app.kubernetes.io/component!=agent"
	shmguardName    = "shmguard"
)

// Webhook is the shmguard-webhook program, built beside the shmguard binary.
func (s *State) Webhook() string { return filepath.Join(filepath.Dir(s.Shmguard), "shmguard-webhook") }

// Agent is the shmguard-agent program, built beside the shmguard binary.
func (s *State) Agent() string { return filepath.Join(filepath.Dir(s.Shmguard), "shmguard-agent") }

// Path joins parts under the state directory.
func (s *State) Path(parts ...string) string {
	return filepath.Join(append([]string{s.Dir}, parts...)...)
}

// Kubeconfig is the admin kubeconfig (group system:masters).
func (s *State) Kubeconfig() string { return s.Path("kubeconfig") }

// Bin is the path of a built component (kubectl, helm, ...).
func (s *State) Bin(name string) string { return filepath.Join(s.BinDir, name) }

// APIServerURL is the API server's address.
func (s *State) APIServerURL() string { return fmt.Sprintf("https://127.0.0.1:%d", s.Ports.APIServer) }

// WebhookURL is shmguard's address as the webhook configurations name it, for a path.
func (s *State) WebhookURL(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", s.Ports.Webhook, path)
}

// MetricsURL is shmguard's metrics port, for a path.
func (s *State) MetricsURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.Ports.Metrics, path)
}

// The files of shmguard's serving certificate and the CA the webhook configurations trust.
func (s *State) WebhookCA() string       { return s.Path("shmguard", "ca.crt") }
func (s *State) WebhookCert() string     { return s.Path("shmguard", "tls.crt") }
func (s *State) WebhookKey() string      { return s.Path("shmguard", "tls.key") }
func (s *State) ShmguardPolicy() string  { return s.Path("shmguard", "policy.yaml") }
func (s *State) ClusterCA() string       { return s.Path("pki", "ca.crt") }
func (s *State) webhookCAKey() string    { return s.Path("pki", "shmguard-ca.key") }
func (s *State) webhookCACert() string   { return s.Path("pki", "shmguard-ca.crt") }
func (s *State) clusterCAKey() string    { return s.Path("pki", "ca.key") }
func (s *State) admissionConfig() string { return s.Path("admission.yaml") }

// Load reads the state of the control plane whose directory is dir.
func Load(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%w: no %s in %s (run scripts/control-plane.sh up)", errNotUp, stateFile, dir)
		}
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.Path(stateFile), append(b, '\n'), 0o644)
}

// Env is what a shell needs to use the control plane: the admin kubeconfig, and the built
// kubectl and helm first on PATH; with a node, the training image's reference too.
func (s *State) Env() string {
	env := fmt.Sprintf("export KUBECONFIG=%s\nexport PATH=%s:$PATH\n", s.Kubeconfig(), s.BinDir)
	if s.Node != nil {
		env += fmt.Sprintf("export SHMGUARD_TRAIN_IMAGE=%s\n", s.Node.Images["SHMGUARD_TRAIN_IMAGE"])
	}
	return env
}

// processes are the control plane's processes, in start order.
func (s *State) processes() []string {
	if s == nil || s.Node == nil {
		return []string{"etcd", "kube-apiserver", "kube-controller-manager", shmguardName}
	}
	return []string{"forward", "etcd", "kube-apiserver", "kube-controller-manager", "containerd",
		"kube-scheduler", "kube-proxy", "kubelet", "gpu-device-plugin", "rdma-device-plugin", "mps-device-plugin"}
}

// start starts a process of the cluster, inside the node's network namespace when there is one.
func (s *State) start(name, bin string, args, env []string) error {
	netns := ""
	if s.Node != nil {
		netns = s.Node.Netns
	}
	bin, args = inNetns(netns, bin, args)
	_, err := startProcess(s.Dir, name, bin, args, env)
	return err
}

// startHealthy starts the built component name with args (start) and waits until url answers
// 200 (waitHealthy, without client credentials).
func (s *State) startHealthy(name string, args []string, url string, timeout time.Duration) error {
	if err := s.start(name, s.Bin(name), args, nil); err != nil {
		return err
	}
	return waitHealthy(s.Dir, name, url, nil, timeout)
}

// readImagesEnv reads NAME=VALUE lines (scripts/build-images.sh's images.env).
func readImagesEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the images: %w (scripts/build-images.sh makes them)", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	for _, k := range []string{"SHMGUARD_WEBHOOK_IMAGE", "SHMGUARD_AGENT_IMAGE", "SHMGUARD_TRAIN_IMAGE",
		"SHMGUARD_PAUSE_IMAGE"} {
		if out[k] == "" {
			return nil, fmt.Errorf("%s names no %s", path, k)
		}
	}
	return out, nil
}
