package node

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

var shmProfiles = schema.GroupVersionResource{Group: "shmguard.io", Version: "v1alpha1", Resource: "shmprofiles"}

// profile is a ShmProfile's status.
type profile struct {
	Workload string
	Peak     int64
	Size     int64
	Runs     int64
}

func getProfile(t *testing.T, ns, name string) (profile, error) {
	t.Helper()
	cfg, err := cp.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, err := dyn.Resource(shmProfiles).Namespace(ns).Get(ctxFor(t, time.Minute), name, metav1.GetOptions{})
	if err != nil {
		return profile{}, err
	}
	var p profile
	p.Workload, _, _ = unstructured.NestedString(o.Object, "spec", "workload")
	p.Peak, _, _ = unstructured.NestedInt64(o.Object, "status", "peakBytes")
	p.Size, _, _ = unstructured.NestedInt64(o.Object, "status", "sizeBytes")
	p.Runs, _, _ = unstructured.NestedInt64(o.Object, "status", "runs")
	return p, nil
}

// understatedJob is a Job whose one DataLoader pod is annotated with 3500Ki batches where they
// are 12Mi: planned just above its use, it passes 90 % of its /dev/shm.
func understatedJob(name string, batches int) *batchv1.Job {
	p := annotate(trainPod("", 1, "2Gi", "--workers", "4", "--prefetch", "2", "--batch-bytes", strconv.Itoa(12<<20),
		"--batches", strconv.Itoa(batches), "--step-seconds", "0.1"),
		"shmguard.io/num-workers", "4", "shmguard.io/prefetch-factor", "2", "shmguard.io/batch-bytes", "3500Ki")
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: p.Annotations, Labels: map[string]string{"job": name}},
			Spec:       p.Spec}},
	}
}

// runJob creates the Job and waits for its pod to end; it returns the pod as it ended.
func runJob(t *testing.T, ns string, job *batchv1.Job) ran {
	t.Helper()
	ctx := ctxFor(t, 5*time.Minute)
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var r ran
	wait(t, 4*time.Minute, "the pod of Job "+job.Name+" ends", func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job=" + job.Name})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				r.pod = p
				return nil
			}
		}
		return fmt.Errorf("%d pods, none ended", len(pods.Items))
	})
	b, err := client.CoreV1().Pods(ns).GetLogs(r.pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.logs = string(b)
	return r
}

func deleteJob(t *testing.T, ns, name string) {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	if err := client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	wait(t, time.Minute, "Job "+name+" and its pods gone", func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job=" + name})
		if err != nil {
			return err
		}
		if _, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err == nil || len(pods.Items) > 0 {
			return fmt.Errorf("still there (%d pods)", len(pods.Items))
		}
		return nil
	})
}

// restartPods deletes the pods labelled selector in ns, each given its own grace period (a
// webhook replica then drains as the chart has it: its idle connections closed, so that the API
// server keeps none to a pod that is gone), and waits until as many are Ready again.
func restartPods(t *testing.T, ns, selector string) {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	old, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(old.Items) == 0 {
		t.Fatalf("pods %s in %s: %d, %v", selector, ns, len(old.Items), err)
	}
	gone := map[string]bool{}
	for _, p := range old.Items {
		gone[p.Name] = true
		if err := client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, 2*time.Minute, fmt.Sprintf("%d new %s pods Ready", len(old.Items), selector), func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if !gone[p.Name] && p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < len(old.Items) {
			return fmt.Errorf("%d Ready", ready)
		}
		return nil
	})
}

type plan struct {
	Required string `json:"required"`
	Observed *struct {
		Peak     string `json:"peak"`
		Runs     int64  `json:"runs"`
		Workload string `json:"workload"`
	} `json:"observed"`
}

func planOf(t *testing.T, p *corev1.Pod) plan {
	t.Helper()
	var out plan
	if err := json.Unmarshal([]byte(p.Annotations["shmguard.io/plan"]), &out); err != nil {
		t.Fatalf("pod %s: shmguard.io/plan %q: %v", p.Name, p.Annotations["shmguard.io/plan"], err)
	}
	return out
}

// A Job whose annotations understate its batches is warned at the threshold and its peak is
// recorded in its ShmProfile. The agent and the webhook are then restarted: the profile keeps
// the peak. The next run of the same Job gets the learned size (the peak × 1.5) and completes
// below the threshold; another Job in the namespace keeps its plan.
func TestTheNextRunOfAJobGetsTheSizeItsLastRunUsed(t *testing.T) {
	agentPod(t)
	ns := newNamespace(t, nil)
	first := runJob(t, ns, understatedJob("learn", 60)).succeeded(t)
	planned := shmVolume(first.pod)
	res := first.result(t)
	wait(t, 30*time.Second, "a ShmNearFull Event on "+first.pod.Name, func() error {
		if len(shmEvents(t, ns, first.pod.Name)) == 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
	var learned profile
	wait(t, 60*time.Second, "the ShmProfile job.learn records the run", func() error {
		var err error
		if learned, err = getProfile(t, ns, "job.learn"); err != nil {
			return err
		}
		if learned.Runs < 1 {
			return fmt.Errorf("%+v", learned)
		}
		return nil
	})
	if learned.Workload != "Job/learn" || learned.Size != planned || float64(learned.Peak) < 0.9*float64(planned) ||
		learned.Peak > planned {
		t.Fatalf("the profile %+v; the plan %d", learned, planned)
	}
	t.Logf("run 1: planned %s, the DataLoader's own peak %s, recorded %s (%.1f%% below the DataLoader's)",
		mib(planned), mib(res.Peak), mib(learned.Peak), 100*(1-float64(learned.Peak)/float64(res.Peak)))

	// Restarts lose nothing: the profile is an object of the API server.
	restartPods(t, agentNamespace, "app.kubernetes.io/component=agent")
	restartPods(t, controlplane.ReleaseNamespace, "app.kubernetes.io/name=shmguard")
	// Both replicas were stopped at once: until the Service routes to the new ones, a create can
	// pass unpatched (failurePolicy Ignore). The runs below start once 20 creates in a row (dry
	// runs) came back patched. (Killed without their drain, with no grace period, the old
	// replicas left the API server idle connections to pods that were gone, and a create in the
	// next test failed open on one of them with "broken pipe".)
	if err := cp.Probe(ctxFor(t, 3*time.Minute), 20, 2*time.Minute); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if again, err := getProfile(t, ns, "job.learn"); err != nil || again.Peak != learned.Peak || again.Runs != learned.Runs {
		t.Fatalf("after the restarts the profile is %+v (%v), was %+v", again, err, learned)
	}

	deleteJob(t, ns, "learn")
	other := runJob(t, ns, understatedJob("other", 10)) // another workload, the same annotations
	second := runJob(t, ns, understatedJob("learn", 60)).succeeded(t)
	want := int64(math.Ceil(float64(learned.Peak)*1.5/(1<<20))) << 20
	if got := shmVolume(second.pod); got != want {
		t.Errorf("run 2's /dev/shm is %s, want the peak %s × 1.5 = %s", mib(got), mib(learned.Peak), mib(want))
	}
	p := planOf(t, second.pod)
	if p.Observed == nil || p.Observed.Workload != "Job/learn" || p.Observed.Runs != learned.Runs {
		t.Errorf("run 2's plan annotation %q does not say it was sized from Job/learn's %d runs",
			second.pod.Annotations["shmguard.io/plan"], learned.Runs)
	}
	res2 := second.result(t)
	t.Logf("run 2: sized %s from use, the DataLoader's peak %s (%.0f%%)", mib(shmVolume(second.pod)), mib(res2.Peak),
		100*float64(res2.Peak)/float64(shmVolume(second.pod)))
	if n := len(shmEvents(t, ns, second.pod.Name)); n != 0 {
		t.Errorf("run 2, sized from use, got %d ShmNearFull Events", n)
	}
	if got := shmVolume(other.pod); got != planned || planOf(t, other.pod).Observed != nil {
		t.Errorf("Job other's /dev/shm is %s with plan %q: another workload's profile leaked into it", mib(got),
			other.pod.Annotations["shmguard.io/plan"])
	}
}

func podEvents(t *testing.T, ns, pod, reason string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(ctxFor(t, time.Minute), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": reason}.String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func agentCounter(metrics, series string) int64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// cgroupV2 says whether the node's cgroups are v2 (the unified hierarchy mounted at
// /sys/fs/cgroup): the node runs on this machine's kernel.
func cgroupV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == 0x63677270 // CGROUP2_SUPER_MAGIC
}

// In a namespace labelled shmguard.io/grow-in-place=true, a pod passing 90 % of its /dev/shm is
// resized through its resize subresource: the API server (with
// InPlacePodVerticalScalingMemoryBackedVolumes on) takes the new sizeLimit. On a cgroup v2 node
// the kubelet remounts the tmpfs at the new size and the agent reports ShmGrown; on cgroup v1
// (this repository's node, docs/e2e.md) the kubelet refuses: the agent reads the refusal from
// the pod's PodResizePending condition, reports it, puts the sizeLimit back, does not ask again,
// and records the peak. The test expects what the node's cgroups allow.
func TestGrowthInPlaceIsAskedForAndTheKubeletsRefusalIsRead(t *testing.T) {
	agent := agentPod(t)
	before := agentMetrics(t, agent)
	ns := newNamespace(t, map[string]string{"shmguard.io/grow-in-place": "true"})
	p := annotate(trainPod("grow", 1, "2Gi", "--workers", "4", "--prefetch", "2", "--batch-bytes",
		strconv.Itoa(12<<20), "--batches", "300", "--step-seconds", "0.1"),
		"shmguard.io/num-workers", "4", "shmguard.io/prefetch-factor", "2", "shmguard.io/batch-bytes", "3500Ki")
	ctx := ctxFor(t, 5*time.Minute)
	created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	planned := shmVolume(created)
	t.Cleanup(func() {
		if t.Failed() { // what the agent did meanwhile
			out, _ := client.CoreV1().Pods(agentNamespace).GetLogs(agent.Name, &corev1.PodLogOptions{
				TailLines: ptr.To[int64](30)}).DoRaw(ctxFor(t, time.Minute))
			t.Logf("the agent %s's last lines:\n%s\nits metrics:\n%s", agent.Name, out, agentMetrics(t, agent))
		}
	})
	if cgroupV2() {
		t.Log("the node's cgroups are v2: the kubelet grows the tmpfs in place")
		t.Log("SKIPPED the cgroup v1 branch (the kubelet refuses the growth): the node's cgroups are v2")
		var grown []corev1.Event
		wait(t, 2*time.Minute, "ShmNearFull then ShmGrown on "+p.Name, func() error {
			near, g := podEvents(t, ns, p.Name, "ShmNearFull"), podEvents(t, ns, p.Name, "ShmGrown")
			if len(near) == 0 || len(g) == 0 {
				return fmt.Errorf("%d ShmNearFull, %d ShmGrown", len(near), len(g))
			}
			grown = g
			return nil
		})
		got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := shmVolume(got); s <= planned {
			t.Errorf("after ShmGrown (%q) the sizeLimit is %d, not above the planned %d", grown[0].Message, s, planned)
		}
		return
	}
	t.Log("the node's cgroups are v1: the kubelet refuses to grow a memory-backed volume")
	t.Log("SKIPPED the cgroup v2 branch (the kubelet grows the tmpfs in place): the node's cgroups are v1")
	var near, refused []corev1.Event
	wait(t, 2*time.Minute, "ShmNearFull then ShmGrowthRefused on "+p.Name, func() error {
		near, refused = podEvents(t, ns, p.Name, "ShmNearFull"), podEvents(t, ns, p.Name, "ShmGrowthRefused")
		if len(near) == 0 || len(refused) == 0 {
			got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return fmt.Errorf("%d ShmNearFull, %d ShmGrowthRefused; the pod %s on %q, /dev/shm %d, conditions %v",
				len(near), len(refused), got.Status.Phase, got.Spec.NodeName, shmVolume(got), got.Status.Conditions)
		}
		return nil
	})
	msg := refused[0].Message
	if !strings.Contains(msg, "the kubelet refused") || !strings.Contains(msg, "not supported on cgroups v1") {
		t.Errorf("ShmGrowthRefused does not give the kubelet's reason: %q", msg)
	}
	t.Logf("crossing at %s, refusal read at %s: %s", near[0].FirstTimestamp.Format(time.RFC3339),
		refused[0].FirstTimestamp.Format(time.RFC3339), msg)
	wait(t, time.Minute, "the sizeLimit put back and no resize pending", func() error {
		got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := shmVolume(got); s != planned {
			return fmt.Errorf("sizeLimit %d, planned %d", s, planned)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue {
				return fmt.Errorf("still %s: %s", c.Reason, c.Message)
			}
		}
		return nil
	})
	wait(t, 3*time.Minute, "pod "+p.Name+" ends", func() error {
		got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodSucceeded && got.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %s", got.Status.Phase)
		}
		return nil
	})
	var recorded profile
	wait(t, time.Minute, "the ShmProfile pod.grow records the peak", func() error {
		var err error
		if recorded, err = getProfile(t, ns, "pod.grow"); err != nil {
			return err
		}
		if recorded.Peak < planned*9/10 {
			return fmt.Errorf("%+v", recorded)
		}
		return nil
	})
	after := agentMetrics(t, agent)
	delta := func(result string) int64 {
		series := `shmguard_agent_resizes_total{result="` + result + `"}`
		return agentCounter(after, series) - agentCounter(before, series)
	}
	// The agent may have restarted in between (another test restarts it): then its counters
	// start again from 0 and count at least this pod.
	if agentCounter(after, `shmguard_agent_samples_total`) < agentCounter(before, `shmguard_agent_samples_total`) {
		delta = func(result string) int64 {
			return agentCounter(after, `shmguard_agent_resizes_total{result="`+result+`"}`)
		}
	}
	if delta("requested") != 1 || delta("refused") != 1 || delta("grown") != 0 {
		t.Errorf("the agent's resizes: requested %d, refused %d, grown %d; want 1 asked, the kubelet's 1 refusal",
			delta("requested"), delta("refused"), delta("grown"))
	}
	if n := len(podEvents(t, ns, p.Name, "ShmGrowthRefused")); n != 1 {
		t.Errorf("%d ShmGrowthRefused Events, want 1: a refused resize is not asked again", n)
	}
}

// A CronJob's runs share one profile, CronJob/<name>: the agent reads each Job's owner, and the
// webhook knows a scheduled Job's pods by the Job's name (the CronJob's and the minute). The run
// after the first one to be recorded gets the learned size.
func TestTheNextScheduledRunOfACronJobGetsTheLearnedSize(t *testing.T) {
	agentPod(t)
	ns := newNamespace(t, nil)
	ctx := ctxFor(t, 6*time.Minute)
	job := understatedJob("nightly", 40)
	job.Spec.Template.Labels = map[string]string{"cron": "nightly"}
	if _, err := client.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: job.Spec}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ended := func() []corev1.Pod {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "cron=nightly"})
		if err != nil {
			t.Fatal(err)
		}
		var out []corev1.Pod
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				out = append(out, p)
			}
		}
		return out
	}
	var learned profile
	wait(t, 3*time.Minute, "a run of the CronJob recorded in cronjob.nightly", func() error {
		var err error
		if learned, err = getProfile(t, ns, "cronjob.nightly"); err != nil {
			return err
		}
		if learned.Runs < 1 {
			return fmt.Errorf("%+v", learned)
		}
		return nil
	})
	if learned.Workload != "CronJob/nightly" {
		t.Fatalf("the profile %+v", learned)
	}
	seen := map[string]bool{}
	for _, p := range ended() {
		seen[p.Name] = true
	}
	want := int64(math.Ceil(float64(learned.Peak)*1.5/(1<<20))) << 20
	var next corev1.Pod
	wait(t, 3*time.Minute, "the next scheduled run created after the profile", func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "cron=nightly"})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if !seen[p.Name] && p.CreationTimestamp.After(time.Now().Add(-2*time.Minute)) && planOf(t, &p).Observed != nil {
				next = p
				return nil
			}
		}
		return fmt.Errorf("%d pods, none sized from use yet", len(pods.Items))
	})
	if got := shmVolume(&next); got < want {
		t.Errorf("the next run's /dev/shm is %s, want at least the peak %s × 1.5 = %s", mib(got), mib(learned.Peak), mib(want))
	}
	t.Logf("CronJob nightly: recorded %s over %d run(s); the next run %s got %s", mib(learned.Peak), learned.Runs,
		next.Name, mib(shmVolume(&next)))
	if err := client.BatchV1().CronJobs(ns).Delete(ctx, "nightly", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
