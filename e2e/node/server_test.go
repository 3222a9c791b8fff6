package node

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// vllmModel is what vLLM 0.33.0 puts in /dev/shm at start, made the way vLLM makes it
// (multiprocessing.shared_memory, every page written), for the launch shapes it reads: tensor,
// pipeline and data parallelism, the executor backend, and the CPU KV offload region an
// OffloadingConnector in --kv-transfer-config names (alone or in a MultiConnector: a file of
// cpu_bytes_to_use per engine, v1/kv_offload/cpu/spec.py:99-130). Each engine's executor (mp, and Ray's,
// which subclasses it) has a broadcast queue to its workers and a response queue from each; each
// tensor-parallel group of more than one rank a broadcaster; each a ShmRingBuffer of
// (chunk + 1 + readers) × chunks bytes (docs/sources.md §10). Before each, the check of vLLM
// 0.33.0 (check_shm_free_space, shm_broadcast.py:242-274): a segment that does not fit in the
// free space of /dev/shm refuses to start, with vLLM's message. Its last line reports the peak
// it saw.
const vllmModel = `
import json, os, shutil, sys, time
from multiprocessing import shared_memory
args = sys.argv[1:]
def flag(names, default):
    value = default
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                value = args[i + 1]
            elif a.startswith(n + "="):
                value = a.split("=", 1)[1]
    return value
tp = int(flag(["--tensor-parallel-size", "-tp"], "1"))
pp = int(flag(["--pipeline-parallel-size", "-pp"], "1"))
dp = int(flag(["--data-parallel-size", "-dp"], "1"))
executor = flag(["--distributed-executor-backend"], None)
offload = 0
kv = json.loads(flag(["--kv-transfer-config"], "{}"))
for c in [kv] + kv.get("kv_connector_extra_config", {}).get("connectors", []):
    if c.get("kv_connector") == "OffloadingConnector":
        offload = int(c["kv_connector_extra_config"]["cpu_bytes_to_use"])
world = tp * pp
if executor is None:
    executor = "uni" if world * dp == 1 else "mp"
MiB = 1 << 20
sizes = []
for engine in range(dp):
    if executor in ("mp", "ray"):
        sizes.append((16 * MiB + 1 + world) * 10)
        sizes += [(24 * MiB + 1 + 1) * 10] * world
    if tp > 1:
        sizes += [(4 * MiB + 1 + tp - 1) * 6] * pp
    if offload:
        sizes.append(offload)
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

// vllmPod launches the model as `vllm serve M FLAGS` on `gpus` GPUs with `memory` as its limit
// ("" none), as a server's pod says it: the webhook reads the launch, not the program behind the
// name.
func vllmPod(gpus int64, memory string, flags string) *corev1.Pod {
	p := shell(trainPod("vllm", gpus, "1Gi"),
		`vllm() { python3 -c "$VLLM_MODEL" "$@"; }; vllm serve facebook/opt-125m `+flags)
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VLLM_MODEL", Value: vllmModel}}
	if memory == "" {
		delete(p.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory)
	} else {
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return p
}

// vllmResult is the model's last line.
type vllmResult struct {
	Peak     int64 `json:"peak_shm_bytes"`
	Size     int64 `json:"shm_size_bytes"`
	Required int64 `json:"required_bytes"`
}

func vllmReport(t *testing.T, r ran) vllmResult {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.logs), "\n")
	var res vllmResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		r.fatalf(t, "the server's last line is not its result (%v)", err)
	}
	return res
}

// Without shmguard, vLLM's start-up check refuses the container's 64 MiB /dev/shm; with it, the
// pod gets the plan of its launch, the segments fit, and neither the program's own peak nor the
// agent's sampled one is above the plan.
func TestAVllmServersSegmentsFitThePlanOfItsLaunch(t *testing.T) {
	bare := run(t, newNamespace(t, off), vllmPod(2, "4Gi", "--tensor-parallel-size 2"), 3*time.Minute)
	if bare.pod.Status.Phase != corev1.PodFailed || !strings.Contains(bare.logs, "RuntimeError: Insufficient space in /dev/shm") {
		bare.fatalf(t, "without shmguard, want vLLM's start-up check to refuse /dev/shm")
	}
	t.Logf("without shmguard: %s", lastLineWith(bare.logs, "RuntimeError"))

	agent := agentPod(t)
	ns := newNamespace(t, nil)
	patched := run(t, ns, vllmPod(2, "4Gi", "--tensor-parallel-size 2"), 3*time.Minute).succeeded(t)
	planned := shmVolume(patched.pod)
	if plan := patched.pod.Annotations["shmguard.io/plan"]; !strings.Contains(plan, `"server":"vllm"`) {
		t.Fatalf("the pod's shmguard.io/plan is %q: want the vLLM server's plan", plan)
	}
	res := vllmReport(t, patched)
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

// The launches a 1Gi /dev/shm fails in vLLM 0.33.0: data parallelism 8 at TP 1 (each engine its
// own queues, 3,200 MiB) and the Ray executor at TP 8 (the mp executor's queues, 2,104 MiB). With
// a 1Gi memory emptyDir at /dev/shm (the size such launches were given before) vLLM refuses to
// start; shmguard raises it to the launch's plan, and they start.
func TestVllmDataParallelAndRayExecutorLaunchesRefuse1GiAndStartUnderThePatch(t *testing.T) {
	shapes := []struct {
		name, flags, memory string
	}{
		{"data parallelism 8", "--data-parallel-size 8", "12Gi"},
		// No memory limit: Ray's default object store would be 30% of it.
		{"the Ray executor, TP 8", "--tensor-parallel-size 8 --distributed-executor-backend ray", ""},
	}
	withDshm := func(p *corev1.Pod) *corev1.Pod {
		size := resource.MustParse("1Gi")
		p.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
		return p
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			bare := run(t, newNamespace(t, off), withDshm(vllmPod(8, s.memory, s.flags)), 3*time.Minute)
			if bare.pod.Status.Phase != corev1.PodFailed || !strings.Contains(bare.logs, "RuntimeError: Insufficient space in /dev/shm") {
				bare.fatalf(t, "at 1Gi, want vLLM's start-up check to refuse /dev/shm")
			}
			t.Logf("at 1Gi: %s", lastLineWith(bare.logs, "RuntimeError"))
			patched := run(t, newNamespace(t, nil), withDshm(vllmPod(8, s.memory, s.flags)), 4*time.Minute).succeeded(t)
			planned := shmVolume(patched.pod)
			res := vllmReport(t, patched)
			t.Logf("under shmguard: planned %s; the segments %s; the peak %s", mib(planned), mib(res.Required), mib(res.Peak))
			if planned <= 1<<30 || res.Size != planned || res.Peak < res.Required || res.Peak > planned {
				t.Errorf("the container's /dev/shm %d bytes and the peak %d: want the plan %d (above 1Gi), above the segments %d",
					res.Size, res.Peak, planned, res.Required)
			}
		})
	}
}

// Two launch shapes shmguard once read short: vLLM's CPU KV offload named through
// --kv-transfer-config (OffloadingConnector and its cpu_bytes_to_use, not the
// --kv-offloading-size shortcut), and two server containers in one pod (prefill and decode, each
// TP 2) that share its /dev/shm. At 1Gi, the size such launches were given before, vLLM's
// start-up check refuses; shmguard sizes the pod from what both containers' launches allocate,
// and they start. A plan that left out the offload region or the second server would refuse here.
func TestVllmKvOffloadConnectorAndTwoServersStartUnderThePatch(t *testing.T) {
	withDshm := func(p *corev1.Pod) *corev1.Pod {
		size := resource.MustParse("1Gi")
		p.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}}}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
		}
		return p
	}
	offload := func() *corev1.Pod {
		return vllmPod(2, "8Gi", `--tensor-parallel-size 2 --kv-transfer-config `+
			`'{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1610612736}}'`)
	}
	twoServers := func() *corev1.Pod {
		p := vllmPod(2, "4Gi", "--tensor-parallel-size 2")
		decode := *p.Spec.Containers[0].DeepCopy()
		decode.Name = "decode"
		p.Spec.Containers[0].Name = "prefill"
		p.Spec.Containers = append(p.Spec.Containers, decode)
		return p
	}
	shapes := []struct {
		name    string
		pod     func() *corev1.Pod
		servers int64 // containers that each allocate the report's segments
	}{
		{"an OffloadingConnector in --kv-transfer-config", offload, 1},
		{"prefill and decode in one pod", twoServers, 2},
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			bare := run(t, newNamespace(t, off), withDshm(s.pod()), 3*time.Minute)
			refused := ""
			for _, c := range bare.pod.Status.ContainerStatuses {
				if e := c.State.Terminated; e != nil && e.ExitCode != 0 && strings.Contains(e.Message, "Insufficient space in /dev/shm") {
					refused = c.Name + ": " + tail(e.Message, 1)
				}
			}
			if bare.pod.Status.Phase != corev1.PodFailed || refused == "" {
				bare.fatalf(t, "at 1Gi, want vLLM's start-up check to refuse /dev/shm")
			}
			t.Logf("at 1Gi: %s", refused)
			patched := run(t, newNamespace(t, nil), withDshm(s.pod()), 4*time.Minute).succeeded(t)
			planned := shmVolume(patched.pod)
			res := vllmReport(t, patched)
			need := s.servers * res.Required
			t.Logf("under shmguard: planned %s; the segments %s (%d server(s)); the first server's peak %s",
				mib(planned), mib(need), s.servers, mib(res.Peak))
			if res.Size != planned || planned < need || res.Peak < res.Required || res.Peak > planned {
				t.Errorf("the container's /dev/shm %d bytes and the peak %d: want the plan %d, at least the segments %d",
					res.Size, res.Peak, planned, need)
			}
		})
	}
}

// sglangModel is an SGLang server with tensor parallelism 2 that holds multimodal features in
// /dev/shm: the TP group's broadcaster (6 chunks of 4 MiB, docs/sources.md §10) and, as
// SGLang's mm_utils does for each feature tensor in flight, SharedMemory segments that no flag
// bounds — here 20 of 46 MiB, every page written. It reports what it holds, then serves (sleeps).
const sglangModel = `
import json, os, sys, time
from multiprocessing import shared_memory
MiB = 1 << 20
sizes = [(4 * MiB + 1 + 2) * 6] + [46 * MiB] * 20
segments = []
for size in sizes:
    m = shared_memory.SharedMemory(create=True, size=size)
    for offset in range(0, size, 4096):
        m.buf[offset] = 1
    segments.append(m)
st = os.statvfs("/dev/shm")
print(json.dumps({"held_bytes": sum(sizes), "shm_size_bytes": st.f_blocks * st.f_frsize}), flush=True)
time.sleep(3600)
`

// servingDeployment runs sglangModel as `sglang serve --tp 2` on 2 GPUs, one replica.
func servingDeployment(name string) *appsv1.Deployment {
	p := shell(trainPod("", 2, "4Gi"),
		`sglang() { python3 -c "$SGLANG_MODEL" "$@"; }; sglang serve --model-path m --tp 2`)
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SGLANG_MODEL", Value: sglangModel}}
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: p.Spec},
		},
	}
}

// runningPod waits for a Running pod labelled app=APP whose pod-template-hash is not notHash
// (the pod of a new rollout), with its server's report written, and returns it and its output.
func runningPod(t *testing.T, ns, app, notHash string) (*corev1.Pod, string) {
	t.Helper()
	ctx := ctxFor(t, 4*time.Minute)
	var pod *corev1.Pod
	var line string
	wait(t, 3*time.Minute, "a Running pod of "+app+" that reports what it holds", func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Labels["pod-template-hash"] == notHash {
				continue
			}
			b, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil || !strings.Contains(string(b), "held_bytes") {
				return fmt.Errorf("pod %s: no report yet (%v)", p.Name, err)
			}
			pod, line = p, strings.TrimSpace(string(b))
			return nil
		}
		return fmt.Errorf("%d pods, none Running", len(pods.Items))
	})
	return pod, line
}

// A serving Deployment's pods live as long as the server: what it holds in /dev/shm beyond the
// segments its flags bound (SGLang's multimodal features) is learned while it runs. The agent
// records the first rollout's peak under Deployment/NAME; the pod of the second rollout gets
// max(the server's plan, the peak × 1.5), and says so in its plan annotation.
func TestTheSecondRolloutOfAServingDeploymentGetsTheSizeItsPeakAsks(t *testing.T) {
	agentPod(t)
	ns := newNamespace(t, nil)
	ctx := ctxFor(t, 8*time.Minute)
	d, err := client.AppsV1().Deployments(ns).Create(ctx, servingDeployment("serve"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, report := runningPod(t, ns, "serve", "")
	planned := shmVolume(first)
	if plan := first.Annotations["shmguard.io/plan"]; !strings.Contains(plan, `"server":"sglang"`) || planOf(t, first).Observed != nil {
		t.Fatalf("the first rollout's plan is %q: want SGLang's plan, not sized from use", plan)
	}
	var held struct {
		Held int64 `json:"held_bytes"`
		Size int64 `json:"shm_size_bytes"`
	}
	if err := json.Unmarshal([]byte(report[strings.LastIndex(report, "\n")+1:]), &held); err != nil || held.Size != planned {
		t.Fatalf("the server's report %q (%v): want its /dev/shm to be the plan %d", report, err, planned)
	}
	var learned profile
	wait(t, 90*time.Second, "the ShmProfile deployment.serve records the running pod's peak", func() error {
		var err error
		if learned, err = getProfile(t, ns, "deployment.serve"); err != nil {
			return err
		}
		if learned.Peak < held.Held {
			return fmt.Errorf("%+v, the server holds %d", learned, held.Held)
		}
		return nil
	})
	if learned.Workload != "Deployment/serve" || learned.Size != planned || learned.Peak > planned {
		t.Fatalf("the profile %+v; the plan %d", learned, planned)
	}
	want := int64(math.Ceil(float64(learned.Peak)*1.5/(1<<20))) << 20
	if want <= planned {
		t.Fatalf("the peak %s × 1.5 is not above the plan %s: the test shows nothing", mib(learned.Peak), mib(planned))
	}

	// The second rollout: a new template, a new ReplicaSet, a new pod.
	d, err = client.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["rollout"] = "2"
	if _, err := client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second, _ := runningPod(t, ns, "serve", first.Labels["pod-template-hash"])
	if got := shmVolume(second); got != want {
		t.Errorf("the second rollout's /dev/shm is %s, want the peak %s × 1.5 = %s (the plan: %s)", mib(got),
			mib(learned.Peak), mib(want), mib(planned))
	}
	if p := planOf(t, second); p.Observed == nil || p.Observed.Workload != "Deployment/serve" {
		t.Errorf("the second rollout's plan annotation %q does not say it was sized from Deployment/serve",
			second.Annotations["shmguard.io/plan"])
	}
	t.Logf("rollout 1: planned %s for SGLang, it held %s, recorded %s; rollout 2: %s", mib(planned), mib(held.Held),
		mib(learned.Peak), mib(shmVolume(second)))
}
