package node

import (
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

// workerKilledByBusError is what the training process raises when it finds, by waitid, a worker
// the signal killed (torch/csrc/DataLoader.cpp, _error_if_any_worker_fails).
const workerKilledByBusError = "is killed by signal: Bus error."

// busErrors counts the DataLoader workers the output shows dying of a Bus error: the lines of
// their own handler, or at least the one the training process found by its exit status. The
// handler's line is best effort (one write(2) from inside the signal handler); the training
// process's report is the worker's exit status, the kernel's word.
func busErrors(logs string) int {
	n := strings.Count(logs, workerBusError)
	if n == 0 && strings.Contains(logs, workerKilledByBusError) {
		return 1
	}
	return n
}

func TestDataLoaderBusErrorWithoutShmguardIsFixedByThePatch(t *testing.T) {
	bare := run(t, newNamespace(t, off), trainPod("dataloader", 1, "2Gi", dataloaderArgs...), 3*time.Minute)
	// A worker that takes a SIGBUS writing a batch into a full /dev/shm prints workerBusError from
	// PyTorch's own handler, then dies of the signal. The training process raises whichever failure
	// it meets first: nine runs in ten "DataLoader worker (pid N) is killed by signal: Bus error",
	// otherwise another worker's "No space left on device" or the dead worker's reset connection.
	if bare.pod.Status.Phase != corev1.PodFailed || busErrors(bare.logs) == 0 {
		bare.fatalf(t, "without shmguard, want the DataLoader failed and a worker dead of a Bus error")
	}
	t.Logf("without shmguard: %d worker(s) died of a Bus error; the training process: %s",
		busErrors(bare.logs), lastLineWith(bare.logs, "Error: "))

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

// One batch larger than the 64 MiB a container has fails the other way a full /dev/shm fails:
// PyTorch cannot place it in shared memory at all. Current PyTorch reserves each segment with
// posix_fallocate and reports the reservation's ENOSPC at once ("unable to allocate shared
// memory(shm) for file </torch_…>", measured on an H100 with PyTorch 2.11); Debian's PyTorch, the
// training image's, only stretches the file (ftruncate and one written byte) and so meets the
// same shortage at the first page past the free space: the worker's SIGBUS. The test runs both
// halves in the image: the DataLoader with a 96 MiB batch, and the reservation current PyTorch
// makes for it.
func TestABatchLargerThanShmFailsWhereItIsPlacedInSharedMemory(t *testing.T) {
	const batch = 96 << 20
	bare := run(t, newNamespace(t, off), trainPod("big-batch", 1, "2Gi", "--workers", "1", "--prefetch", "1",
		"--batch-bytes", strconv.Itoa(batch), "--batches", "2", "--step-seconds", "0"), 3*time.Minute)
	if bare.pod.Status.Phase != corev1.PodFailed || busErrors(bare.logs) == 0 {
		bare.fatalf(t, "a %d MiB batch under a 64 MiB /dev/shm: want the worker's Bus error", batch>>20)
	}
	t.Logf("Debian's PyTorch: %s", lastLineWith(bare.logs, "Error: "))
	reserve := fmt.Sprintf(`python3 -c '
import errno, os
fd = os.open("/dev/shm/torch_reserve", os.O_CREAT | os.O_RDWR, 0o600)
os.unlink("/dev/shm/torch_reserve")
try:
    os.posix_fallocate(fd, 0, %d)
    print("reserved")
except OSError as e:
    print("unable to allocate shared memory(shm): " + os.strerror(e.errno) + " (" + str(e.errno) + ")")
'`, batch)
	r := run(t, newNamespace(t, off), shell(trainPod("reserve", 1, "2Gi"), reserve), 2*time.Minute).succeeded(t)
	if got := strings.TrimSpace(r.logs); got != "unable to allocate shared memory(shm): No space left on device (28)" {
		t.Errorf("reserving %d MiB in a 64 MiB /dev/shm as current PyTorch does: %q, want ENOSPC at once", batch>>20, got)
	}
	// Patched, the same DataLoader places its batch: 1 worker × (1 + 2) × 96 MiB, and the base.
	p := annotate(trainPod("big-batch", 1, "2Gi", "--workers", "1", "--prefetch", "1",
		"--batch-bytes", strconv.Itoa(batch), "--batches", "2", "--step-seconds", "0"),
		"shmguard.io/num-workers", "1", "shmguard.io/prefetch-factor", "1", "shmguard.io/batch-bytes", "96Mi")
	patched := run(t, newNamespace(t, nil), p, 3*time.Minute).succeeded(t)
	if res := patched.result(t); res.Peak < batch || res.Peak > shmVolume(patched.pod) {
		t.Errorf("patched: peak %s in a %s /dev/shm; want at least one batch, within the plan", mib(res.Peak), mib(shmVolume(patched.pod)))
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
