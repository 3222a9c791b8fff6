package node

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

// A GPU Job's and a GPU Deployment's pods, made by their controllers, run with the planned
// /dev/shm.
func TestControllersPodsRunWithThePlannedShm(t *testing.T) {
	ns := newNamespace(t, nil)
	ctx := ctxFor(t, 4*time.Minute)
	df := "df -B1 --output=size /dev/shm | tail -n 1"
	tmpl := func() corev1.PodTemplateSpec {
		p := annotate(shell(trainPod("", 1, "4Gi"), df+"; sleep 3600"), "shmguard.io/num-workers", "8", "shmguard.io/batch-bytes", "32Mi")
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: p.Annotations, Labels: map[string]string{"app": "gpu"}}, Spec: p.Spec}
	}
	job := tmpl()
	job.Spec.Containers[0].Command = []string{"sh", "-c", df}
	job.Labels = map[string]string{"app": "job"}
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-job"},
		Spec:       batchv1.JobSpec{Completions: ptr.To[int32](2), Parallelism: ptr.To[int32](2), Template: job},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep := tmpl()
	dep.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-deployment"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: dep.Labels},
			Template: dep},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"job", "gpu"} {
		wait(t, 3*time.Minute, "2 "+app+" pods print /dev/shm's size", func() error {
			pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err != nil {
				return err
			}
			seen := 0
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.Phase == corev1.PodPending {
					continue
				}
				out, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
				if err != nil || strings.TrimSpace(string(out)) == "" {
					continue
				}
				if got, want := strings.TrimSpace(string(out)), fmt.Sprint(shmVolume(p)); got != want || want == "0" {
					t.Fatalf("%s pod %s: df says %s bytes, its plan %s", app, p.Name, got, want)
				}
				seen++
			}
			if seen < 2 {
				return fmt.Errorf("%d of 2", seen)
			}
			return nil
		})
	}
}

// GPU pods are created, 200 at least, while shmguard is upgraded (a rolling restart) and one
// replica is evicted: no create fails and every pod is patched. The mutating webhook's
// failurePolicy is Ignore, so a pod that missed shmguard would be created unpatched: each one is
// counted. The eviction goes through the PodDisruptionBudget, which refuses it while the
// rollout leaves too few replicas ready.
func TestEveryPodIsPatchedThroughAnUpgradeAndAnEvictedReplica(t *testing.T) {
	ns := newNamespace(t, nil)
	ctx := ctxFor(t, 10*time.Minute)
	t.Cleanup(func() { webhookWhole(t, ctx) })
	const atLeast = 200
	var failed, count atomic.Int32
	var disrupted atomic.Bool
	var wg sync.WaitGroup
	created := make(chan string, 10000)
	start := time.Now()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; count.Load() < atLeast || !disrupted.Load(); i += 4 {
				p := controlplane.GPUPod(fmt.Sprintf("gpu-%04d", i), 1, "4Gi")
				p.Spec.Containers[0].Image = trainImage
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
				p.Spec.Containers[0].Command = []string{"sleep", "3600"}
				if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					failed.Add(1)
					t.Errorf("create %s: %v", p.Name, err)
				} else {
					created <- p.Name
				}
				count.Add(1)
				time.Sleep(200 * time.Millisecond) // about 20 creates a second, for as long as the disruptions take
			}
		}(w)
	}
	// Meanwhile: a helm upgrade that restarts shmguard's pods, then one replica evicted.
	values, err := cp.HelmValueArgs()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"upgrade", controlplane.ReleaseName, cp.Chart, "--namespace", controlplane.ReleaseNamespace,
		"--wait", "--timeout", "3m", "--set-string", "podAnnotations.restartedAt=" + time.Now().Format(time.RFC3339Nano)},
		values...)
	upgrade := time.Now()
	if out, err := cp.Run(nil, "helm", args...); err != nil {
		t.Errorf("helm upgrade: %v\n%s", err, out)
	}
	t.Logf("helm upgrade --wait took %.1fs", time.Since(upgrade).Seconds())
	// One replica evicted, once the PodDisruptionBudget allows it; the other then cannot be:
	// with its peer gone and the replacement not yet ready, evicting it would leave none.
	sg := client.CoreV1().Pods(controlplane.ReleaseNamespace)
	evict := func(name string) error {
		return sg.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: controlplane.ReleaseNamespace}})
	}
	var replicas []string
	wait(t, 2*time.Minute, "one of shmguard's two replicas evicted", func() error {
		pods, err := sg.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=shmguard"})
		if err != nil {
			return err
		}
		replicas = nil
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				replicas = append(replicas, p.Name)
			}
		}
		if len(replicas) != 2 {
			return fmt.Errorf("%d replicas", len(replicas))
		}
		return evict(replicas[0])
	})
	if err := evict(replicas[1]); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting the last ready replica %s: %v, want the PodDisruptionBudget's refusal (429)", replicas[1], err)
	}
	time.Sleep(3 * time.Second) // creates go on while the evicted replica is replaced
	disrupted.Store(true)
	wg.Wait()
	close(created)
	t.Logf("%d pods created in %.1fs while shmguard was upgraded and a replica evicted", len(created), time.Since(start).Seconds())
	unpatched := 0
	for name := range created {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !controlplane.HasDshm(&p.Spec) || p.Annotations["shmguard.io/plan"] == "" {
			unpatched++
		}
	}
	if failed.Load() != 0 || unpatched != 0 || count.Load() < atLeast {
		t.Errorf("of %d pods: %d creates failed, %d created without shmguard's patch", count.Load(), failed.Load(), unpatched)
	}
}
