package node

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// vllmModel is what vLLM puts in /dev/shm at start with the multiprocessing executor, made the
// way vLLM makes it (multiprocessing.shared_memory, every page written): the executor's
// broadcast queue, a response queue per worker and the tensor-parallel group's broadcaster,
// each a ShmRingBuffer of (chunk + 1 + readers) × chunks bytes (docs/sources.md §10). Before
// each, the check of vLLM 0.33.0 (check_shm_free_space, shm_broadcast.py:242-269): a segment
// that does not fit in the free space of /dev/shm refuses to start, with vLLM's message. Its
// last line reports the peak it saw.
const vllmModel = `
import json, os, shutil, sys, time
from multiprocessing import shared_memory
args, tp = sys.argv[1:], 1
for i, a in enumerate(args):
    if a in ("--tensor-parallel-size", "-tp"):
        tp = int(args[i + 1])
    elif a.startswith("--tensor-parallel-size="):
        tp = int(a.split("=", 1)[1])
MiB = 1 << 20
sizes = []
if tp > 1:
    sizes.append((16 * MiB + 1 + tp) * 10)
    sizes += [(24 * MiB + 1 + 1) * 10] * tp
    sizes.append((4 * MiB + 1 + tp) * 6)
need = sum(sizes)
st = os.statvfs("/dev/shm")
segments, peak = [], 0
for size in sizes:
    free = shutil.disk_usage("/dev/shm").free
    if size > free:
        print("RuntimeError: Insufficient space in /dev/shm for shared-memory allocation: %.0f MiB required, "
              "%.0f MiB free. Increase /dev/shm (e.g. --shm-size or --ipc=host)." % (size / MiB, free / MiB), flush=True)
        sys.exit(1)
    m = shared_memory.SharedMemory(create=True, size=size)
    for offset in range(0, size, 4096):
        m.buf[offset] = 1
    segments.append(m)
    now = os.statvfs("/dev/shm")
    peak = max(peak, (now.f_blocks - now.f_bfree) * now.f_frsize)
time.sleep(8)
print(json.dumps({"peak_shm_bytes": peak, "shm_size_bytes": st.f_blocks * st.f_frsize, "required_bytes": need}), flush=True)
for m in segments:
    m.close()
    m.unlink()
`

// vllmPod launches the model as `vllm serve` with tensor parallelism 2 on 2 GPUs, as a
// server's pod says it: the webhook reads the launch, not the program behind the name.
func vllmPod() *corev1.Pod {
	p := shell(trainPod("vllm", 2, "4Gi"),
		`vllm() { python3 -c "$VLLM_MODEL" "$@"; }; vllm serve facebook/opt-125m --tensor-parallel-size 2`)
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VLLM_MODEL", Value: vllmModel}}
	return p
}

// Without shmguard, vLLM's start-up check refuses the container's 64 MiB /dev/shm; with it, the
// pod gets the plan of its launch, the segments fit, and neither the program's own peak nor the
// agent's sampled one is above the plan.
func TestAVllmServersSegmentsFitThePlanOfItsLaunch(t *testing.T) {
	bare := run(t, newNamespace(t, off), vllmPod(), 3*time.Minute)
	if bare.pod.Status.Phase != corev1.PodFailed || !strings.Contains(bare.logs, "RuntimeError: Insufficient space in /dev/shm") {
		t.Fatalf("without shmguard the server %s; want vLLM's start-up check to refuse /dev/shm:\n%s", bare.outcome(), tail(bare.logs, 10))
	}
	t.Logf("without shmguard: %s", lastLineWith(bare.logs, "RuntimeError"))

	agent := agentPod(t)
	ns := newNamespace(t, nil)
	patched := run(t, ns, vllmPod(), 3*time.Minute).succeeded(t)
	planned := shmVolume(patched.pod)
	if plan := patched.pod.Annotations["shmguard.io/plan"]; !strings.Contains(plan, `"server":"vllm"`) {
		t.Fatalf("the pod's shmguard.io/plan is %q: want the vLLM server's plan", plan)
	}
	lines := strings.Split(strings.TrimSpace(patched.logs), "\n")
	var res struct {
		Peak     int64 `json:"peak_shm_bytes"`
		Size     int64 `json:"shm_size_bytes"`
		Required int64 `json:"required_bytes"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("the server's last line is not its result (%v):\n%s", err, tail(patched.logs, 10))
	}
	peak, ok := gauge(agentMetrics(t, agent), "shmguard_pod_shm_peak_bytes", ns, patched.pod.Name)
	t.Logf("with shmguard: planned %s; the segments %s; the program's peak %s; the agent's peak %s",
		mib(planned), mib(res.Required), mib(res.Peak), mib(peak))
	if res.Size != planned || res.Peak < res.Required || res.Peak > planned {
		t.Errorf("the container's /dev/shm %d bytes and the peak %d: want the plan %d, above the segments %d",
			res.Size, res.Peak, planned, res.Required)
	}
	if !ok || peak > planned || peak < res.Required/2 {
		t.Errorf("the agent's peak %d bytes (found %v): want at most the plan %d, and it saw the segments %d",
			peak, ok, planned, res.Required)
	}
}
