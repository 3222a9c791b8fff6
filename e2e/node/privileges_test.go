package node

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"shmguard.io/e2e/controlplane"
)

// mlockScript locks 64 MiB, past the container runtime's RLIMIT_MEMLOCK (8 MiB on this kernel),
// and prints the limit, mlock's result and errno, and the process's effective capabilities.
// RDMA registration of host memory (ib_umem_get) follows the same rule as mlock: past the limit
// only with CAP_IPC_LOCK in the effective set.
const mlockScript = `python3 -c '
import ctypes, mmap, resource
n = 64 << 20
soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
buf = mmap.mmap(-1, n)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(n))
eff = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff:")][0]
print("memlock", soft, "mlock", r, ctypes.get_errno(), "capeff", eff)
'`

// mlocked is what mlockScript printed.
type mlocked struct {
	soft, r, errno int64
	capEff         string
}

func readMlock(t *testing.T, r ran) mlocked {
	t.Helper()
	var m mlocked
	if _, err := fmt.Sscanf(strings.TrimSpace(r.logs), "memlock %d mlock %d %d capeff %s", &m.soft, &m.r, &m.errno, &m.capEff); err != nil {
		t.Fatalf("pod %s printed %q: %v", r.pod.Name, r.logs, err)
	}
	return m
}

// withRDMA makes the pod request the node's RDMA resource, as NCCL over InfiniBand pods do.
func withRDMA(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers[0].Resources.Limits[controlplane.RDMAResource] = resource.MustParse("1")
	return p
}

func runAs(p *corev1.Pod, uid int64) *corev1.Pod {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	return p
}

func hasCap(p *corev1.Pod, c corev1.Capability) bool {
	sc := p.Spec.Containers[0].SecurityContext
	if sc == nil || sc.Capabilities == nil {
		return false
	}
	for _, x := range sc.Capabilities.Add {
		if x == c {
			return true
		}
	}
	return false
}

// IPC_LOCK lets a root container lock memory past RLIMIT_MEMLOCK — the rule RDMA registration
// follows — and shmguard gives it to a root container that requests an RDMA resource; without it
// the lock fails.
func TestIPCLockLetsAProcessLockMemory(t *testing.T) {
	withPatch := run(t, newNamespace(t, nil), withRDMA(runAs(shell(trainPod("mlock", 1, "4Gi"), mlockScript), 0)), 2*time.Minute).succeeded(t)
	without := run(t, newNamespace(t, off), withRDMA(runAs(shell(trainPod("mlock", 1, "4Gi"), mlockScript), 0)), 2*time.Minute).succeeded(t)
	with, bare := readMlock(t, withPatch), readMlock(t, without)
	t.Logf("root with IPC_LOCK: %+v; without: %+v", with, bare)
	if !hasCap(withPatch.pod, "IPC_LOCK") || hasCap(without.pod, "IPC_LOCK") {
		t.Errorf("IPC_LOCK in the patched root RDMA pod: %v, in the bare one: %v", hasCap(withPatch.pod, "IPC_LOCK"), hasCap(without.pod, "IPC_LOCK"))
	}
	if bare.soft >= 64<<20 || bare.r == 0 {
		t.Errorf("without IPC_LOCK, locking 64 MiB over a %d-byte RLIMIT_MEMLOCK returned %d; want a failure", bare.soft, bare.r)
	}
	if with.r != 0 {
		t.Errorf("with IPC_LOCK as root: mlock returned %d (errno %d); want 0", with.r, with.errno)
	}
}

// A non-root container given IPC_LOCK still cannot lock past the limit: the capability never
// reaches its effective set (no ambient capabilities). So shmguard gives a non-root RDMA
// container none, and its audit says what works instead.
func TestIPCLockDoesNothingForANonRootContainer(t *testing.T) {
	p := runAs(shell(trainPod("mlock-1000", 1, "1Gi"), mlockScript), 1000)
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
	m := readMlock(t, run(t, newNamespace(t, off), p, 2*time.Minute).succeeded(t))
	t.Logf("uid 1000 with IPC_LOCK in capabilities.add: %+v", m)
	if m.r == 0 || m.soft >= 64<<20 || strings.Trim(m.capEff, "0") != "" {
		t.Errorf("uid 1000 with IPC_LOCK: mlock of 64 MiB over %d bytes returned %d, CapEff %s; want a failure and no effective capability", m.soft, m.r, m.capEff)
	}

	patched := run(t, newNamespace(t, nil), withRDMA(runAs(shell(trainPod("rdma-1000", 1, "4Gi"), mlockScript), 1000)), 2*time.Minute).succeeded(t)
	if hasCap(patched.pod, "IPC_LOCK") || shmVolume(patched.pod) == 0 {
		t.Errorf("a non-root RDMA pod: IPC_LOCK %v, dshm %d bytes; want dshm and no capability", hasCap(patched.pod, "IPC_LOCK"), shmVolume(patched.pod))
	}
	if ids := audit(t, withRDMA(runAs(trainPod("rdma-1000", 1, "4Gi"), 1000))); !has(ids, "ipc-lock-non-root") {
		t.Errorf("shmguard audit of a non-root RDMA pod: %v, want ipc-lock-non-root", ids)
	}
}

// A 4-GPU pod of two containers, patched under the default policy, gets neither hostIPC nor
// IPC_LOCK, runs, and its containers see one /dev/shm device: what NCCL checks before it uses
// P2P or SHM between ranks (NVIDIA/nccl src/init.cc, shmDev) — not the node's.
func TestAMultiGPUPodGetsNoPrivilegeAndOneShmDevice(t *testing.T) {
	script := "stat -c %d /dev/shm"
	p := shell(trainPod("ranks", 2, "4Gi"), script)
	second := p.Spec.Containers[0]
	second.Name = "train-1"
	second.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("4Gi"), controlplane.GPUResource: resource.MustParse("2")}}
	p.Spec.Containers = append(p.Spec.Containers, second)
	r := run(t, newNamespace(t, nil), p, 2*time.Minute).succeeded(t)
	if r.pod.Spec.HostIPC || hasCap(r.pod, "IPC_LOCK") || shmVolume(r.pod) == 0 {
		t.Errorf("patched 4-GPU pod: hostIPC %v, IPC_LOCK %v, dshm %d bytes; want dshm only", r.pod.Spec.HostIPC, hasCap(r.pod, "IPC_LOCK"), shmVolume(r.pod))
	}
	devices := map[string]bool{}
	for _, c := range r.pod.Spec.Containers {
		b, err := client.CoreV1().Pods(r.pod.Namespace).GetLogs(r.pod.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctxFor(t, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		devices[strings.TrimSpace(string(b))] = true
	}
	var node syscall.Stat_t
	if err := syscall.Stat("/dev/shm", &node); err != nil {
		t.Fatal(err)
	}
	if len(devices) != 1 || devices[fmt.Sprint(node.Dev)] {
		t.Errorf("/dev/shm devices of the pod's containers: %v (the node's: %d); want one, its own", devices, node.Dev)
	}
}

// hostIPC puts a pod's processes in the node's IPC namespace, where a namespace's policy rule
// keeps it (hostIPC: always); a Pod Security baseline namespace gets the volume and no hostIPC.
func TestHostIPCIsTheNodesIPCNamespace(t *testing.T) {
	node, err := os.Readlink("/proc/self/ns/ipc") // the kubelet shares the test's IPC namespace
	if err != nil {
		t.Fatal(err)
	}
	script := "readlink /proc/self/ns/ipc"
	pod := func() *corev1.Pod {
		return annotate(shell(trainPod("ipc", 2, "4Gi"), script), "shmguard.io/num-workers", "2", "shmguard.io/batch-bytes", "8Mi")
	}
	always := run(t, newNamespaceNamed(t, controlplane.HostIPCNamespacePrefix, nil), pod(), 2*time.Minute).succeeded(t)
	if got := strings.TrimSpace(always.logs); !always.pod.Spec.HostIPC || got != node {
		t.Errorf("a 2-GPU pod under hostIPC: always: hostIPC %v, its IPC namespace %s, the node's %s", always.pod.Spec.HostIPC, got, node)
	}
	byDefault := run(t, newNamespace(t, nil), pod(), 2*time.Minute).succeeded(t)
	if got := strings.TrimSpace(byDefault.logs); byDefault.pod.Spec.HostIPC || got == node || shmVolume(byDefault.pod) == 0 {
		t.Errorf("under the default policy: hostIPC %v, IPC namespace %s (the node's %s), dshm %d bytes",
			byDefault.pod.Spec.HostIPC, got, node, shmVolume(byDefault.pod))
	}
	baseline := map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}
	b := run(t, newNamespaceNamed(t, controlplane.HostIPCNamespacePrefix, baseline), pod(), 2*time.Minute).succeeded(t)
	if got := strings.TrimSpace(b.logs); b.pod.Spec.HostIPC || got == node || shmVolume(b.pod) == 0 {
		t.Errorf("hostIPC: always in a baseline namespace: hostIPC %v, IPC namespace %s (the node's %s), dshm %d bytes",
			b.pod.Spec.HostIPC, got, node, shmVolume(b.pod))
	}
}
