package node

import (
	"os"

	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Docker ticket's failure: 4 workers, prefetch 2, 12 MiB batches: about 120 MiB of batches
// in /dev/shm at once, where a container has 64 MiB.
var dataloaderArgs = []string{"--workers", "4", "--prefetch", "2", "--batch-bytes", strconv.Itoa(12 << 20),
	"--batches", "40", "--step-seconds", "0.05"}

// workerBusError is what PyTorch's SIGBUS handler in a DataLoader worker prints
// (torch/csrc/DataLoader.cpp, handler_SIGBUS) before the signal kills the worker.
const workerBusError = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."

func TestDataLoaderBusErrorWithoutShmguardIsFixedByThePatch(t *testing.T) {
	bare := run(t, newNamespace(t, off), trainPod("dataloader", 1, "2Gi", dataloaderArgs...), 3*time.Minute)
	if bare.pod.Status.Phase != corev1.PodFailed {
		t.Fatalf("without shmguard the DataLoader %s; want it killed by a Bus error:\n%s", bare.outcome(), tail(bare.logs, 10))
	}
	// A worker that takes a SIGBUS writing a batch into a full /dev/shm prints workerBusError from
	// PyTorch's own handler, then dies of the signal. The training process raises whichever failure
	// it meets first: nine runs in ten "DataLoader worker (pid N) is killed by signal: Bus error",
	// otherwise another worker's "No space left on device" or the dead worker's reset connection.
	if !strings.Contains(bare.logs, workerBusError) {
		t.Fatalf("without shmguard: no DataLoader worker died of a Bus error (%s):\n%s", bare.outcome(), tail(bare.logs, 10))
	}
	t.Logf("without shmguard: %d worker(s) died of a Bus error; the training process: %s",
		strings.Count(bare.logs, workerBusError), lastLineWith(bare.logs, "Error: "))

	p := annotate(trainPod("dataloader", 1, "2Gi", dataloaderArgs...),
		"shmguard.io/num-workers", "4", "shmguard.io/prefetch-factor", "2", "shmguard.io/batch-bytes", "12Mi")
	patched := run(t, newNamespace(t, nil), p, 3*time.Minute).succeeded(t)
	planned := shmVolume(patched.pod)
	res := patched.result(t)
	t.Logf("with shmguard: planned %s, the container's /dev/shm %s, the DataLoader's peak %s",
		mib(planned), mib(res.Size), mib(res.Peak))
	if planned == 0 || res.Size != planned {
		t.Errorf("the container's /dev/shm is %d bytes, the plan %d", res.Size, planned)
	}
	if res.Peak > planned || res.Peak <= 64<<20 {
		t.Errorf("the DataLoader's peak %d bytes: want above the 64 MiB default and at most the plan, %d", res.Peak, planned)
	}
}

// Without annotations the estimate sizes the pod; the DataLoader must complete in it.
func TestDataLoaderWithoutAnnotationsCompletesInTheEstimate(t *testing.T) {
	r := run(t, newNamespace(t, nil), trainPod("estimated", 1, "2Gi", dataloaderArgs...), 3*time.Minute).succeeded(t)
	res := r.result(t)
	t.Logf("estimated %s for a 2Gi pod; the DataLoader's peak %s", mib(shmVolume(r.pod)), mib(res.Peak))
	if res.Size != shmVolume(r.pod) || res.Peak > res.Size {
		t.Errorf("/dev/shm %d bytes, planned %d, peak %d", res.Size, shmVolume(r.pod), res.Peak)
	}
}

// df in the container shows the planned sizeLimit; a sizeLimit above the memory limit is cut to
// the memory limit by the kubelet, which shmguard says before the pod exists.
func TestTheContainerSeesThePlannedSize(t *testing.T) {
	df := "df -B1 --output=size /dev/shm | tail -n 1"
	p := annotate(shell(trainPod("df", 1, "4Gi"), df), "shmguard.io/num-workers", "8", "shmguard.io/batch-bytes", "32Mi")
	r := run(t, newNamespace(t, nil), p, 2*time.Minute).succeeded(t)
	if got := bytesOf(t, r.logs); got != shmVolume(r.pod) || got == 0 {
		t.Errorf("df says /dev/shm is %d bytes; the plan's sizeLimit is %d", got, shmVolume(r.pod))
	}

	over := shell(trainPod("over", 1, "1Gi"), df)
	over.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(2<<30, resource.BinarySI)}}}}
	over.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
	if ids := audit(t, over); !has(ids, "shm-over-memory-limit") {
		t.Errorf("shmguard audit of a 2Gi sizeLimit under a 1Gi limit: findings %v, want shm-over-memory-limit", ids)
	}
	r = run(t, newNamespace(t, off), over, 2*time.Minute).succeeded(t)
	if got := bytesOf(t, r.logs); got != 1<<30 {
		t.Errorf("a 2Gi sizeLimit under a 1Gi memory limit: df says %d bytes, want the memory limit", got)
	}

	// A plan that needs more than the memory limit is refused where shmguard enforces.
	big := annotate(shell(trainPod("too-big", 1, "1Gi"), df), "shmguard.io/num-workers", "8", "shmguard.io/batch-bytes", "64Mi")
	if ids := audit(t, big); !has(ids, "shm-over-memory-limit") {
		t.Errorf("shmguard audit: findings %v, want shm-over-memory-limit", ids)
	}
	ns := newNamespace(t, map[string]string{"shmguard.io/enforce": "true"})
	_, err := client.CoreV1().Pods(ns).Create(ctxFor(t, time.Minute), big, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("creating a pod whose plan exceeds its memory limit in an enforce namespace: %v, want a denial", err)
	}
}

// IPC_LOCK lets a process lock more than RLIMIT_MEMLOCK (pin_memory's page-locked buffers);
// without it the lock fails, as PyTorch's pin_memory thread does.
func TestIPCLockLetsAProcessLockMemory(t *testing.T) {
	script := `python3 -c '
import ctypes, mmap, resource
n = 64 << 20
soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
buf = mmap.mmap(-1, n)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(n))
print("memlock", soft, "mlock", r, ctypes.get_errno())
'`
	withPatch := run(t, newNamespace(t, nil), annotate(shell(trainPod("mlock", 1, "1Gi"), script),
		"shmguard.io/num-workers", "2", "shmguard.io/batch-bytes", "8Mi"), 2*time.Minute).succeeded(t)
	without := run(t, newNamespace(t, off), shell(trainPod("mlock", 1, "1Gi"), script), 2*time.Minute).succeeded(t)
	t.Logf("with IPC_LOCK: %s; without: %s", strings.TrimSpace(withPatch.logs), strings.TrimSpace(without.logs))
	var soft, r, errno int64
	if _, err := fmt.Sscanf(strings.TrimSpace(without.logs), "memlock %d mlock %d %d", &soft, &r, &errno); err != nil || soft >= 64<<20 || r == 0 {
		t.Errorf("without IPC_LOCK, locking 64 MiB over a %d-byte RLIMIT_MEMLOCK: %q, want it to fail", soft, without.logs)
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(withPatch.logs), "memlock %d mlock %d %d", &soft, &r, &errno); err != nil || r != 0 {
		t.Errorf("with IPC_LOCK: %q, want mlock to return 0", withPatch.logs)
	}
	if !hasCap(withPatch.pod, "IPC_LOCK") || hasCap(without.pod, "IPC_LOCK") {
		t.Errorf("IPC_LOCK in the patched pod: %v, in the bare one: %v", hasCap(withPatch.pod, "IPC_LOCK"), hasCap(without.pod, "IPC_LOCK"))
	}
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

// hostIPC puts a multi-GPU pod's processes in the node's IPC namespace; a Pod Security baseline
// namespace gets the volume and no hostIPC.
func TestHostIPCIsTheNodesIPCNamespace(t *testing.T) {
	node := readlink(t, "/proc/self/ns/ipc") // the kubelet shares the test's IPC namespace: only its network one is its own
	script := "readlink /proc/self/ns/ipc"
	priv := run(t, newNamespace(t, nil), annotate(shell(trainPod("ipc", 2, "4Gi"), script),
		"shmguard.io/num-workers", "2", "shmguard.io/batch-bytes", "8Mi"), 2*time.Minute).succeeded(t)
	if got := strings.TrimSpace(priv.logs); !priv.pod.Spec.HostIPC || got != node {
		t.Errorf("a patched 2-GPU pod: hostIPC %v, its IPC namespace %s, the node's %s", priv.pod.Spec.HostIPC, got, node)
	}
	baseline := map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}
	b := run(t, newNamespace(t, baseline), annotate(shell(trainPod("ipc", 2, "4Gi"), script),
		"shmguard.io/num-workers", "2", "shmguard.io/batch-bytes", "8Mi"), 2*time.Minute).succeeded(t)
	if got := strings.TrimSpace(b.logs); b.pod.Spec.HostIPC || got == node || shmVolume(b.pod) == 0 {
		t.Errorf("in a baseline namespace: hostIPC %v, IPC namespace %s (the node's %s), /dev/shm volume %d bytes",
			b.pod.Spec.HostIPC, got, node, shmVolume(b.pod))
	}
}

// /dev/shm pages count against the memory limit: filling /dev/shm and then allocating past what
// is left gets the container OOM-killed, and shmguard's findings say how little was left.
func TestShmPagesCountAgainstTheMemoryLimit(t *testing.T) {
	script := `dd if=/dev/zero of=/dev/shm/fill bs=1M count=400 status=none && python3 -c 'b = bytearray(300 << 20); print("allocated", len(b))'`
	p := shell(trainPod("oom", 1, "512Mi"), script)
	p.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(450<<20, resource.BinarySI)}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
	if ids := audit(t, p); !has(ids, "shm-over-memory-limit") && !has(ids, "memory-headroom") {
		t.Errorf("shmguard audit of 450Mi of /dev/shm under a 512Mi limit: findings %v", ids)
	}
	r := run(t, newNamespace(t, off), p, 2*time.Minute)
	term := r.pod.Status.ContainerStatuses[0].State.Terminated
	if r.pod.Status.Phase != corev1.PodFailed || term == nil || term.Reason != "OOMKilled" {
		t.Errorf("400 MiB in /dev/shm plus 300 MiB of process memory under 512Mi: phase %s, %+v, output %q",
			r.pod.Status.Phase, term, r.logs)
	}
}

func readlink(t *testing.T, path string) string {
	t.Helper()
	s, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bytesOf(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("not a number of bytes: %q", s)
	}
	return n
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func lastLineWith(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}
