// A second, bare control plane of a test's own: etcd and kube-apiserver on free loopback ports,
// with no controllers, whose API server loads admission policies from the static manifests its
// AdmissionConfiguration names (KEP-5793, beta and on by default in Kubernetes 1.37). It shares
// the main control plane's certificates and binaries, and nothing else: its own etcd, data and
// logs, so that stopping them touches no other test.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// StaticPlane is such a control plane, its processes' pid files and logs in Dir.
type StaticPlane struct {
	Dir      string
	Port     int // kube-apiserver's
	cp       *State
	etcdArgs []string
	apiArgs  []string
	etcdURL  string
}

// StartStaticPlane starts etcd and kube-apiserver in dir, the API server with admissionConfig
// (an AdmissionConfiguration file), and waits until it is ready.
func (s *State) StartStaticPlane(dir, admissionConfig string) (*StaticPlane, error) {
	var ports [3]int
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &StaticPlane{Dir: dir, Port: ports[2], cp: s}
	p.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	p.etcdArgs = []string{"--name=static", "--data-dir=" + filepath.Join(dir, "etcd-data"),
		"--listen-client-urls=" + p.etcdURL, "--advertise-client-urls=" + p.etcdURL,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer, "--initial-cluster=static=" + peer,
		"--unsafe-no-fsync=true", "--log-level=warn"}
	p.apiArgs = replaceArgs(s.apiServerArgs(), map[string]string{
		"--etcd-servers":                  p.etcdURL,
		"--secure-port":                   fmt.Sprint(p.Port),
		"--cert-dir":                      filepath.Join(dir, "apiserver"),
		"--admission-control-config-file": admissionConfig,
		"--enable-admission-plugins":      "PodSecurity,MutatingAdmissionPolicy,ValidatingAdmissionPolicy",
	})
	if err := p.StartEtcd(); err != nil {
		return nil, err
	}
	if err := p.StartAPIServer(); err != nil {
		p.Stop()
		return nil, err
	}
	if err := p.WaitReady(90 * time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// StartEtcd starts its etcd (again) and waits until it is healthy.
func (p *StaticPlane) StartEtcd() error {
	if _, err := startProcess(p.Dir, "etcd", p.cp.Bin("etcd"), p.etcdArgs, nil); err != nil {
		return err
	}
	return waitHealthy(p.Dir, "etcd", p.etcdURL+"/health", nil, 30*time.Second)
}

// StopEtcd stops its etcd.
func (p *StaticPlane) StopEtcd() error { return stopProcess(p.Dir, "etcd", 10*time.Second) }

// StartAPIServer starts its kube-apiserver (again) without waiting.
func (p *StaticPlane) StartAPIServer() error {
	_, err := startProcess(p.Dir, "kube-apiserver", p.cp.Bin("kube-apiserver"), p.apiArgs, nil)
	return err
}

// StopAPIServer stops its kube-apiserver.
func (p *StaticPlane) StopAPIServer() error {
	return stopProcess(p.Dir, "kube-apiserver", 60*time.Second)
}

// WaitReady waits until its kube-apiserver answers /readyz with 200.
func (p *StaticPlane) WaitReady(timeout time.Duration) error {
	client, err := p.cp.adminHTTPClient()
	if err != nil {
		return err
	}
	return waitHealthy(p.Dir, "kube-apiserver", p.URL()+"/readyz", client, timeout)
}

// URL is its API server's.
func (p *StaticPlane) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", p.Port) }

// RestConfig is the client configuration of its API server, as the main control plane's admin.
func (p *StaticPlane) RestConfig() (*rest.Config, error) {
	cfg, err := p.cp.RestConfig()
	if err != nil {
		return nil, err
	}
	cfg.Host = p.URL()
	return cfg, nil
}

// Clientset is a typed client of its API server, as the main control plane's admin.
func (p *StaticPlane) Clientset() (*kubernetes.Clientset, error) {
	cfg, err := p.RestConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Stop stops both processes.
func (p *StaticPlane) Stop() {
	_ = p.StopAPIServer()
	_ = p.StopEtcd()
}
