// The node: containerd with runc and the CNI bridge, the kubelet, kube-scheduler and kube-proxy,
// and a GPU device plugin, all inside the node's network namespace (netns.go), as
// hack/local-up-cluster.sh runs them on one machine. The host paths they use are recorded and
// removed by Down, with every mount, cgroup and kernel setting put back (node_cleanup.go).
package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeName is the node's name; the kubelet registers it with its address nodeIP.
const NodeName = "shmguard-node"

// GPUResource is the extended resource the GPU device plugin advertises, GPUs the devices it has.
const (
	GPUResource = "nvidia.com/gpu"
	GPUs        = 8
)

// The node's other device resources, each served by its own instance of the device plugin:
// an RDMA resource as k8s-rdma-shared-dev-plugin names them, and replicated GPUs served the way
// NVIDIA's plugin serves them through MPS, mounting MPSShmDir (State.Path) at each allocated
// container's /dev/shm in place of the MPS daemon's tmpfs.
const (
	RDMAResource = "rdma/hca_shared_devices_a"
	MPSResource  = "nvidia.com/gpu.shared"
	MPSShmDir    = "mps-shm"
)

// devicePlugins are the device plugin's instances: process name, resource, devices, and the
// directory (under the state's) mounted at /dev/shm, if any.
var devicePlugins = []struct {
	process, resource string
	devices           int
	shmDir            string
}{
	{"gpu-device-plugin", GPUResource, GPUs, ""},
	{"rdma-device-plugin", RDMAResource, GPUs, ""},
	{"mps-device-plugin", MPSResource, 4, MPSShmDir},
}

// Node is the part of State a node adds.
type Node struct {
	Netns string `json:"netns"` // the network namespace every process runs in
	// ImagesDir holds the image archives scripts/build-images.sh built, Images their names
	// (SHMGUARD_WEBHOOK_IMAGE, SHMGUARD_AGENT_IMAGE, SHMGUARD_TRAIN_IMAGE, SHMGUARD_PAUSE_IMAGE).
	ImagesDir string            `json:"imagesDir"`
	Images    map[string]string `json:"images"`
	// GPUPlugin is the device plugin's binary (e2e/cmd/gpu-device-plugin).
	GPUPlugin string `json:"gpuPlugin"`
	Ports     struct {
		KubeletHealthz int `json:"kubeletHealthz"`
		Scheduler      int `json:"scheduler"`
		ProxyHealthz   int `json:"proxyHealthz"`
		ProxyMetrics   int `json:"proxyMetrics"`
	} `json:"ports"`
	// Created are the host paths the node made (they were not there before Up); Down removes
	// them. Sysctls are the kernel settings the kubelet changes, with the values they had.
	Created []string          `json:"created"`
	Sysctls map[string]string `json:"sysctls"`
	// NetnsMount: `ip netns add` made /run/netns a mount point, which it was not before.
	NetnsMount bool `json:"netnsMount"`
}

// The host paths the kubelet, containerd and CNI use whatever they are told.
var nodeHostPaths = []string{
	kubeletRoot, "/var/log/pods", "/var/log/containers", "/var/lib/cni", "/run/containerd",
}

// kubeletRoot is the kubelet's --root-dir: the default, where the agent's hostPath looks.
const kubeletRoot = "/var/lib/kubelet"

// The kernel settings the kubelet sets itself when protectKernelDefaults is false
// (pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables).
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// ImageTag is the image reference the chart's values name for ref ("repo:tag" -> repo, tag).
func ImageTag(ref string) (repo, tag string) {
	i := strings.LastIndexByte(ref, ':')
	repo, tag = ref[:i], ref[i+1:]
	return strings.TrimPrefix(repo, "docker.io/library/"), tag
}

func (s *State) containerdSocket() string { return s.Path("containerd", "containerd.sock") }

// nodeMarker holds the state directory of the node that owns the host's fixed paths, so that a
// later Up can find a node whose run was killed before its Down.
const nodeMarker = "/run/shmguard-e2e-node"

// takeDownAbandonedNode runs Down on the node the marker names when none of its processes is
// alive (its run was killed, or the machine restored without them); a node still running is an
// error that says how to stop it.
func takeDownAbandonedNode(self string) error {
	b, err := os.ReadFile(nodeMarker)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	dir := strings.TrimSpace(string(b))
	if dir == self {
		return nil
	}
	other, err := Load(dir)
	if err != nil {
		return fmt.Errorf("%s names %s, which holds no node state (%v): remove it once no node runs", nodeMarker, dir, err)
	}
	for _, name := range other.processes() {
		if alive(processPid(dir, name)) {
			return fmt.Errorf("the node of %s runs on this machine (its %s is alive): stop it first with SHMGUARD_CONTROL_PLANE_DIR=%s scripts/control-plane.sh down", dir, name, dir)
		}
	}
	fmt.Fprintf(os.Stderr, "control-plane: the node of %s was left without its processes: taking it down\n", dir)
	return Down(dir)
}

// prepareNode checks that no other node uses the host's fixed paths, records what it will change,
// and makes the network namespace and the forwarder to the host's loopback.
func (s *State) prepareNode() error {
	n := s.Node
	if err := takeDownAbandonedNode(s.Dir); err != nil {
		return err
	}
	for _, p := range nodeHostPaths {
		entries, err := os.ReadDir(p)
		switch {
		case os.IsNotExist(err):
			n.Created = append(n.Created, p)
		case err != nil:
			return err
		case len(entries) > 0:
			return fmt.Errorf("%s is not empty: another node runs on this machine (stop it first)", p)
		}
	}
	if _, err := os.Stat("/run/netns"); os.IsNotExist(err) {
		n.Created = append(n.Created, "/run/netns")
	}
	n.NetnsMount = len(mountsUnder([]string{"/run/netns"})) == 0
	n.Sysctls = map[string]string{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return err
		}
		n.Sysctls[k] = strings.TrimSpace(string(b))
	}
	n.Created = append(n.Created, nodeMarker)
	if err := s.save(); err != nil {
		return err
	}
	if err := writeFileAtomic(nodeMarker, []byte(s.Dir+"\n"), 0o644); err != nil {
		return err
	}
	if err := createNetns(n.Netns); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ports := []string{}
	for _, p := range []int{s.Ports.Etcd, s.Ports.APIServer, s.Ports.ControllerManager,
		n.Ports.KubeletHealthz, n.Ports.Scheduler, n.Ports.ProxyHealthz, n.Ports.ProxyMetrics} {
		ports = append(ports, fmt.Sprint(p))
	}
	// Started outside the namespace (startProcess, not s.start): it listens on the host.
	_, err = startProcess(s.Dir, "forward", self, []string{"forward", "--netns", netnsPath(n.Netns),
		"--ports", strings.Join(ports, ",")}, nil)
	return err
}

func (s *State) startContainerd(ctx context.Context) error {
	n := s.Node
	dir := s.Path("containerd")
	for _, d := range []string{dir, s.Path("cni", "net.d"), s.Path("containerd", "certs.d", "_default")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// Pulls go to a closed loopback port and fail at once: every image is imported.
	hosts := "server = \"https://127.0.0.1:9\"\n[host.\"https://127.0.0.1:9\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
	if err := os.WriteFile(s.Path("containerd", "certs.d", "_default", "hosts.toml"), []byte(hosts), 0o644); err != nil {
		return err
	}
	// A bridge with host-local addresses, as the kubelet's node e2e tests use; no masquerade and
	// no route out of the namespace.
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "shmguard-e2e",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, nodeBridge, podCIDR, nodeIP, s.Path("cni", "ipam"))
	if err := os.WriteFile(s.Path("cni", "net.d", "10-shmguard.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	// restrict_oom_score_adj: this machine's root lacks CAP_SYS_RESOURCE, so runc cannot lower
	// a sandbox's oom_score_adj below its own; containerd then keeps it at or above containerd's.
	config := fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = %q
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = %q
      SystemdCgroup = false

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = %q
`, s.Path("containerd", "root"), s.Path("containerd", "state"), s.containerdSocket(),
		n.Images["SHMGUARD_PAUSE_IMAGE"], s.Path("containerd", "certs.d"), s.Path("cni", "net.d"),
		s.Bin("runc"), nodeIP)
	if err := os.WriteFile(s.Path("containerd", "config.toml"), []byte(config), 0o644); err != nil {
		return err
	}
	// The shim is found on PATH.
	env := []string{"PATH=" + s.BinDir + ":" + os.Getenv("PATH")}
	if err := s.start("containerd", s.Bin("containerd"), []string{"--config", s.Path("containerd", "config.toml")}, env); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.ctr("version"); err == nil {
			break
		}
		if time.Now().After(deadline) || !alive(processPid(s.Dir, "containerd")) {
			return fmt.Errorf("containerd did not answer on %s:\n%s", s.containerdSocket(), logTail(s.Dir, "containerd", 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, name := range []string{"pause", "shmguard-webhook", "shmguard-agent", "train"} {
		if _, err := s.ctr("images", "import", "--local", filepath.Join(n.ImagesDir, name+".tar")); err != nil {
			return err
		}
	}
	return nil
}

// ctr runs ctr against the node's containerd in the k8s.io namespace, where the kubelet's images
// live.
func (s *State) ctr(args ...string) ([]byte, error) {
	out, err := exec.Command(s.Bin("ctr"), append([]string{"--address", s.containerdSocket(), "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

func (s *State) startScheduler() error {
	kc := s.Path("scheduler.kubeconfig")
	args := []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", s.Node.Ports.Scheduler),
		"--leader-elect=false",
	}
	return s.startHealthy("kube-scheduler", args, fmt.Sprintf("https://127.0.0.1:%d/healthz", s.Node.Ports.Scheduler), time.Minute)
}

func (s *State) startProxy() error {
	// conntrack settings left as the kernel has them (0 = do not set): they are not per
	// namespace on every kernel.
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
clientConnection:
  kubeconfig: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, podCIDR, NodeName, s.Path("proxy.kubeconfig"), s.Node.Ports.ProxyHealthz, s.Node.Ports.ProxyMetrics)
	if err := os.WriteFile(s.Path("kube-proxy.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	return s.startHealthy("kube-proxy", []string{"--config=" + s.Path("kube-proxy.yaml")},
		fmt.Sprintf("http://127.0.0.1:%d/livez", s.Node.Ports.ProxyHealthz), time.Minute)
}

func (s *State) startKubelet() error {
	// failCgroupV1: false — kubelet 1.35+ refuses cgroup v1 otherwise, and this machine has only
	// v1. protectKernelDefaults: false — the kubelet sets the kernel settings it wants, and Down
	// puts them back. Image garbage collection is off: the imported images cannot be pulled again.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
address: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
protectKernelDefaults: false
failSwapOn: false
resolvConf: ""
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
serializeImagePulls: false
maxPods: 250
featureGates:
  InPlacePodVerticalScaling: true
  InPlacePodVerticalScalingMemoryBackedVolumes: true
`, s.containerdSocket(), s.ClusterCA(), nodeIP, s.Node.Ports.KubeletHealthz)
	if err := os.WriteFile(s.Path("kubelet.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	args := []string{
		"--config=" + s.Path("kubelet.yaml"), "--kubeconfig=" + s.Path("kubelet.kubeconfig"),
		"--hostname-override=" + NodeName, "--node-ip=" + nodeIP, "--root-dir=" + kubeletRoot, "--v=1",
	}
	return s.startHealthy("kubelet", args, fmt.Sprintf("http://127.0.0.1:%d/healthz", s.Node.Ports.KubeletHealthz), time.Minute)
}

func (s *State) startGPUPlugin() error {
	for _, p := range devicePlugins {
		args := []string{"--kubelet-dir=" + filepath.Join(kubeletRoot, "device-plugins"),
			fmt.Sprintf("--devices=%d", p.devices), "--resource=" + p.resource}
		if p.shmDir != "" {
			dir := s.Path(p.shmDir)
			if err := os.MkdirAll(dir, 0o1777); err != nil {
				return err
			}
			args = append(args, "--shm-mount="+dir)
		}
		if _, err := startProcess(s.Dir, p.process, s.Node.GPUPlugin, args, nil); err != nil {
			return err
		}
	}
	return nil
}

// waitNodeReady waits until the node is Ready and offers the plugin's GPUs.
func (s *State) waitNodeReady(ctx context.Context) error {
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	last := "not registered"
	for time.Now().Before(deadline) {
		node, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err == nil {
			ready := false
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status == corev1.ConditionTrue
					last = "Ready=" + string(c.Status) + ": " + c.Message
				}
			}
			missing := ""
			for _, p := range devicePlugins {
				if n := node.Status.Allocatable[corev1.ResourceName(p.resource)]; n.Value() != int64(p.devices) {
					missing += fmt.Sprintf(" %s %s of %d", p.resource, n.String(), p.devices)
				}
			}
			if ready && missing == "" {
				return nil
			}
			if ready {
				last = "Ready, with allocatable" + missing
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("node %s not ready with its devices after 90s (%s):\n%s", NodeName, last, logTail(s.Dir, "kubelet", 20))
}
