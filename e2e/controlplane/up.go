// Up and Down: the control plane started and stopped as a whole.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options say where the parts come from.
type Options struct {
	Dir      string // the state directory (created; must not hold a running control plane)
	BinDir   string // etcd, kube-apiserver, kube-controller-manager, kubectl, helm
	Shmguard string // the shmguard binary
	Chart    string // charts/shmguard
	CRDDir   string // the upstream CRDs (their SOURCES.md beside them); "" or missing: none
	// Node adds a node (node.go) in a network namespace of its own, and installs shmguard on it
	// with helm from its image instead of running it on loopback.
	Node      bool
	ImagesDir string // with Node: scripts/build-images.sh's directory (images.env and archives)
	GPUPlugin string // with Node: the GPU device plugin's binary
	Log       func(format string, args ...any)
}

// Running reports whether every process of the control plane in dir runs.
func Running(dir string) bool {
	if _, err := Load(dir); err != nil {
		return false
	}
	s, _ := Load(dir)
	for _, name := range s.processes() {
		if !alive(processPid(dir, name)) {
			return false
		}
	}
	return true
}

// Dead names the processes of the control plane in dir that are not running, in start order;
// none when it is up whole.
func Dead(dir string) []string {
	s, err := Load(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range s.processes() {
		if !alive(processPid(dir, name)) {
			out = append(out, name)
		}
	}
	return out
}

// Up starts a control plane in o.Dir, or returns the one already running there. It returns once
// every CRD is Established and a probe pod has been patched through shmguard's webhook.
func Up(ctx context.Context, o Options) (*State, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if Running(o.Dir) {
		logf("control plane already up in %s", o.Dir)
		return Load(o.Dir)
	}
	if err := Down(o.Dir); err != nil {
		return nil, err
	}
	s := &State{Dir: o.Dir, BinDir: o.BinDir, Shmguard: o.Shmguard, Chart: o.Chart, CRDDir: o.CRDDir}
	for _, p := range []string{s.Dir, s.Path("pki"), s.Path("shmguard"), s.Path("apiserver")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	ports := []*int{&s.Ports.Etcd, &s.Ports.EtcdPeer, &s.Ports.APIServer, &s.Ports.ControllerManager,
		&s.Ports.Webhook, &s.Ports.Metrics}
	if o.Node {
		images, err := readImagesEnv(filepath.Join(o.ImagesDir, "images.env"))
		if err != nil {
			return nil, err
		}
		s.Node = &Node{Netns: netnsName(o.Dir), ImagesDir: o.ImagesDir, Images: images, GPUPlugin: o.GPUPlugin}
		np := &s.Node.Ports
		ports = append(ports, &np.KubeletHealthz, &np.Scheduler, &np.ProxyHealthz, &np.ProxyMetrics)
	}
	for _, port := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		*port = p
	}
	type step struct {
		what string
		run  func() error
	}
	steps := []step{
		{"certificates", s.writePKI},
		{"etcd", s.startEtcd},
		{"kube-apiserver", s.startAPIServer},
		{"kube-controller-manager", s.startControllerManager},
		{"CRDs", func() error { return s.installCRDs(ctx, logf) }},
	}
	if s.Node == nil {
		steps = append(steps,
			step{"shmguard", func() error { return s.prepareShmguard(ctx) }},
			step{"webhooks", func() error { return s.RegisterWebhooks(ctx) }})
	} else {
		steps = append(append([]step{steps[0], {"network namespace", s.prepareNode}}, steps[1:]...),
			step{"containerd and images", func() error { return s.startContainerd(ctx) }},
			step{"kube-scheduler", s.startScheduler},
			step{"kubelet", s.startKubelet},
			step{"kube-proxy", s.startProxy}, // healthy once its node exists
			step{"GPU device plugin", s.startGPUPlugin},
			step{"node Ready", func() error { return s.waitNodeReady(ctx) }},
			step{"shmguard (helm install)", func() error { return s.installShmguard(ctx) }})
	}
	steps = append(steps, step{"probe pod", func() error { return s.Probe(ctx, 1, time.Minute) }})
	for _, step := range steps {
		start := time.Now()
		if err := step.run(); err != nil {
			return nil, fmt.Errorf("%s: %w (logs in %s)", step.what, err, s.Dir)
		}
		if err := s.save(); err != nil {
			return nil, err
		}
		logf("%-24s %5.1fs", step.what, time.Since(start).Seconds())
	}
	return s, nil
}

// Down stops every process of the control plane in dir and removes the directory. A directory
// that holds no control plane is left alone.
func Down(dir string) error {
	s, err := Load(dir)
	if err != nil {
		return nil
	}
	var first error
	procs := append(append(s.processes(), FleetProcesses...), PeerProcesses...) // a test's or bench's, when left running
	for i := len(procs) - 1; i >= 0; i-- {
		if procs[i] == "forward" {
			continue // the last to go: it stops nothing and is needed by nothing below
		}
		if err := stopProcess(dir, procs[i], 15*time.Second); err != nil && first == nil {
			first = err
		}
	}
	if s.Node != nil {
		if err := s.cleanNode(); err != nil && first == nil {
			first = err
		}
		if err := stopProcess(dir, "forward", 5*time.Second); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	return os.RemoveAll(dir)
}

func (s *State) writePKI() error {
	ca, err := NewCA("shmguard-e2e-cluster-ca", s.ClusterCA(), s.clusterCAKey())
	if err != nil {
		return err
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	type cert struct {
		spec CertSpec
		name string
	}
	certs := []cert{
		{CertSpec{CommonName: "kube-apiserver", Server: true,
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
			IPs:      []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1"), net.ParseIP(nodeIP)}}, "apiserver"},
		{CertSpec{CommonName: "shmguard-e2e-admin", Organization: []string{"system:masters"}}, "admin"},
		{CertSpec{CommonName: "system:kube-controller-manager"}, "controller-manager"},
		// What the API server shows webhooks (AdmissionConfiguration below).
		{CertSpec{CommonName: "kube-apiserver"}, "webhook-client"},
		{CertSpec{CommonName: "kube-controller-manager", Server: true, DNSNames: []string{"localhost"}, IPs: loopback},
			"controller-manager-serving"},
	}
	kubeconfigs := []struct{ file, user string }{
		{s.Kubeconfig(), "admin"}, {s.Path("controller-manager.kubeconfig"), "controller-manager"},
	}
	if s.Node != nil {
		// The node's components, as the API server's Node and RBAC authorizers know them.
		certs = append(certs,
			cert{CertSpec{CommonName: "system:node:" + NodeName, Organization: []string{"system:nodes"}}, "kubelet"},
			cert{CertSpec{CommonName: "system:kube-scheduler"}, "scheduler"},
			cert{CertSpec{CommonName: "system:kube-proxy"}, "proxy"},
			cert{CertSpec{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, "apiserver-kubelet-client"})
		for _, u := range []string{"kubelet", "scheduler", "proxy"} {
			kubeconfigs = append(kubeconfigs, struct{ file, user string }{s.Path(u + ".kubeconfig"), u})
		}
	}
	for _, c := range certs {
		if err := ca.Issue(c.spec, s.Path("pki", c.name+".crt"), s.Path("pki", c.name+".key")); err != nil {
			return err
		}
	}
	if err := WriteServiceAccountKey(s.Path("pki", "sa.key"), s.Path("pki", "sa.pub")); err != nil {
		return err
	}
	if err := s.RotateWebhookCert(); err != nil {
		return err
	}
	for _, kc := range kubeconfigs {
		if err := s.writeKubeconfig(kc.file, kc.user); err != nil {
			return err
		}
	}
	return s.writeAdmissionConfig()
}

// RotateWebhookCert makes a new CA for shmguard and a serving certificate signed by it, as
// cert-manager does when it renews a self-signed issuer, and makes the new CA the bundle the
// webhook configurations trust once RegisterWebhooks runs again.
func (s *State) RotateWebhookCert() error {
	ca, err := NewCA("shmguard-e2e-webhook-ca", s.webhookCACert(), s.webhookCAKey())
	if err != nil {
		return err
	}
	if err := s.IssueWebhookCert(ca); err != nil {
		return err
	}
	return writeFileAtomic(s.WebhookCA(), ca.CertPEM, 0o644)
}

// IssueWebhookCert writes a serving certificate for shmguard on loopback signed by ca; shmguard
// picks it up at its next reload.
func (s *State) IssueWebhookCert(ca *CA) error {
	spec := CertSpec{CommonName: "shmguard.shmguard-system.svc", Server: true,
		DNSNames: []string{"localhost", "shmguard.shmguard-system.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}
	return ca.Issue(spec, s.WebhookCert(), s.WebhookKey())
}

// SetWebhookCABundle writes the CA bundle (PEM, one or more certificates) that
// RegisterWebhooks puts in the webhook configurations.
func (s *State) SetWebhookCABundle(pem []byte) error {
	return writeFileAtomic(s.WebhookCA(), pem, 0o644)
}

func (s *State) writeKubeconfig(file, user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["shmguard-e2e"] = &clientcmdapi.Cluster{Server: s.APIServerURL(), CertificateAuthority: s.ClusterCA()}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificate: s.Path("pki", user+".crt"), ClientKey: s.Path("pki", user+".key")}
	cfg.Contexts["shmguard-e2e"] = &clientcmdapi.Context{Cluster: "shmguard-e2e", AuthInfo: user}
	cfg.CurrentContext = "shmguard-e2e"
	return clientcmd.WriteToFile(*cfg, file)
}

// writeAdmissionConfig gives the API server a client certificate for calls to webhooks on this
// host: a kubeconfig whose users entry is named after the webhook's host and port
// (apiserver.config.k8s.io/v1 WebhookAdmissionConfiguration).
func (s *State) writeAdmissionConfig() error {
	cfg := clientcmdapi.NewConfig()
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Ports.Webhook))
	client := &clientcmdapi.AuthInfo{
		ClientCertificate: s.Path("pki", "webhook-client.crt"), ClientKey: s.Path("pki", "webhook-client.key")}
	cfg.AuthInfos[host] = client
	// With a node the API server calls shmguard through its Service (name.namespace.svc:port).
	cfg.AuthInfos[shmguardName+"."+ReleaseNamespace+".svc:443"] = client
	if err := clientcmd.WriteToFile(*cfg, s.Path("webhook-client.kubeconfig")); err != nil {
		return err
	}
	plugin := func(name string) string {
		return fmt.Sprintf(`- name: %s
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, name, s.Path("webhook-client.kubeconfig"))
	}
	text := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
		plugin("MutatingAdmissionWebhook") + plugin("ValidatingAdmissionWebhook")
	return os.WriteFile(s.admissionConfig(), []byte(text), 0o644)
}

func (s *State) startEtcd() error {
	client := fmt.Sprintf("http://127.0.0.1:%d", s.Ports.Etcd)
	peer := fmt.Sprintf("http://127.0.0.1:%d", s.Ports.EtcdPeer)
	args := []string{
		"--name=shmguard-e2e", "--data-dir=" + s.Path("etcd-data"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=shmguard-e2e=" + peer,
		"--unsafe-no-fsync=true", "--quota-backend-bytes=4294967296", "--log-level=warn",
	}
	return s.startHealthy("etcd", args, client+"/health", 30*time.Second)
}

// apiServerArgs are kube-apiserver's flags on loopback, before a node's changes.
func (s *State) apiServerArgs() []string {
	return []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", s.Ports.Etcd),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		// The kubernetes Service cannot point at loopback; nothing in this cluster calls it.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", s.Ports.APIServer),
		"--cert-dir=" + s.Path("apiserver"),
		"--tls-cert-file=" + s.Path("pki", "apiserver.crt"), "--tls-private-key-file=" + s.Path("pki", "apiserver.key"),
		"--client-ca-file=" + s.ClusterCA(),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=" + s.APIServerURL(),
		"--service-account-key-file=" + s.Path("pki", "sa.pub"),
		"--service-account-signing-key-file=" + s.Path("pki", "sa.key"),
		"--authorization-mode=RBAC", "--allow-privileged=true",
		// On by default; named so that a default changing upstream cannot turn them off here.
		"--enable-admission-plugins=PodSecurity,MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
		"--admission-control-config-file=" + s.admissionConfig(),
		"--profiling=false",
	}
}

func (s *State) startAPIServer() error {
	args := s.apiServerArgs()
	if s.Node != nil {
		// As a cluster's API server: reachable from the pods at the node's address, the
		// kubernetes Service pointing at it, nodes authorized as nodes, and a client
		// certificate for the kubelet's API (logs, exec).
		args = replaceArgs(args, map[string]string{
			"--bind-address": "0.0.0.0", "--advertise-address": nodeIP,
			"--authorization-mode":              "Node,RBAC",
			"--enable-admission-plugins":        "PodSecurity,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
			"--endpoint-reconciler-type":        "",
			"--kubelet-client-certificate":      s.Path("pki", "apiserver-kubelet-client.crt"),
			"--kubelet-client-key":              s.Path("pki", "apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types": "InternalIP",
			// Kubernetes 1.37's alpha growth of a memory-backed emptyDir through the pod's resize
			// subresource (KEP-6030), on here and on the kubelet: the node agent's growth in place.
			"--feature-gates": "InPlacePodVerticalScalingMemoryBackedVolumes=true",
		})
	}
	if err := s.start("kube-apiserver", s.Bin("kube-apiserver"), args, nil); err != nil {
		return err
	}
	client, err := s.adminHTTPClient()
	if err != nil {
		return err
	}
	if err := waitHealthy(s.Dir, "kube-apiserver", s.APIServerURL()+"/readyz", client, 90*time.Second); err != nil {
		return err
	}
	// The chart is rendered for this version (helm's --kube-version).
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	s.KubeVersion = v.GitVersion
	return nil
}

func (s *State) startControllerManager() error {
	args := []string{
		"--kubeconfig=" + s.Path("controller-manager.kubeconfig"),
		"--authentication-kubeconfig=" + s.Path("controller-manager.kubeconfig"),
		"--authorization-kubeconfig=" + s.Path("controller-manager.kubeconfig"),
		"--root-ca-file=" + s.ClusterCA(),
		"--service-account-private-key-file=" + s.Path("pki", "sa.key"),
		"--use-service-account-credentials=true",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", s.Ports.ControllerManager),
		"--tls-cert-file=" + s.Path("pki", "controller-manager-serving.crt"),
		"--tls-private-key-file=" + s.Path("pki", "controller-manager-serving.key"),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
		"--leader-elect=false",
	}
	return s.startHealthy("kube-controller-manager", args,
		fmt.Sprintf("https://127.0.0.1:%d/healthz", s.Ports.ControllerManager), time.Minute)
}

// replaceArgs sets each --flag of set to its value in args (appending the ones args lacks);
// an empty value removes the flag.
func replaceArgs(args []string, set map[string]string) []string {
	var out []string
	done := map[string]bool{}
	for _, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		v, ok := set[flag]
		switch {
		case !ok:
			out = append(out, a)
		case v != "":
			out = append(out, flag+"="+v)
		}
		done[flag] = true
	}
	for _, flag := range sortedKeys(set) {
		if !done[flag] && set[flag] != "" {
			out = append(out, flag+"="+set[flag])
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RestConfig is the admin's client configuration.
func (s *State) RestConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.WarningHandler = rest.NoWarnings{} // callers that read warnings set their own handler
	return cfg, nil
}

// Clientset is a typed client as the admin.
func (s *State) Clientset() (*kubernetes.Clientset, error) {
	cfg, err := s.RestConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func (s *State) adminHTTPClient() (*http.Client, error) {
	pair, err := tls.LoadX509KeyPair(s.Path("pki", "admin.crt"), s.Path("pki", "admin.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(s.ClusterCA())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool}}}, nil
}

// RestartAPIServer stops kube-apiserver and starts it again with the same flags and state,
// returning once it is ready: what a client's watch meets when the API server is restarted or
// upgraded.
func (s *State) RestartAPIServer() error {
	if err := stopProcess(s.Dir, "kube-apiserver", 60*time.Second); err != nil {
		return err
	}
	return s.startAPIServer()
}
