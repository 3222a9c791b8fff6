package fleet

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

// Storm is a burst of GPU pods that controllers create.
type Storm struct {
	Name string
	Pods int
	// Pod is the pod every one of its pods is made from.
	Pod func() *corev1.Pod
	// Start makes the controllers create the pods in ns.
	Start func(ctx context.Context, e *Env, ns string) error
	// Selector selects its pods.
	Selector string
	// Restart deletes its running pods at once for their controllers to recreate (a mass restart);
	// the storm is then the recreation.
	Restart bool
}

const stormLabel = "shmguard.io/fleet-storm"

// trainingPod is the mission's workload: an annotated DataLoader pod of 8 GPUs on a fake node.
func trainingPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{stormLabel: "jobset"},
			Annotations: map[string]string{"shmguard.io/num-workers": "8", "shmguard.io/prefetch-factor": "2",
				"shmguard.io/batch-bytes": "96Mi"},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{gpuContainer([]string{"torchrun", "--nnodes", "125", "--nproc_per_node", "8",
				"train.py"}, 8)},
			Tolerations:  []corev1.Toleration{controlplane.FleetToleration},
			NodeSelector: controlplane.FleetSelector,
		},
	}
}

// JobSetStorm is one JobSet of `pods` annotated 8-GPU pods: one replicated Job, Indexed, that
// many completions in parallel. As training JobSets are set up, a pod that fails fails its Job
// (backoffLimit 0) and the JobSet controller restarts the whole JobSet (failurePolicy
// maxRestarts): it deletes the Job and makes it again, every pod at once (a mass restart).
func JobSetStorm(pods int) *Storm {
	s := &Storm{Name: "jobset", Pods: pods, Pod: trainingPod, Selector: stormLabel + "=jobset"}
	s.Start = func(ctx context.Context, e *Env, ns string) error {
		tmpl := trainingPod()
		podTemplate, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tmpl)
		if err != nil {
			return err
		}
		delete(podTemplate, "status")
		js := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
			"metadata": map[string]any{"name": "train"},
			"spec": map[string]any{
				"replicatedJobs": []any{map[string]any{
					"name": "workers", "replicas": int64(1),
					"template": map[string]any{"spec": map[string]any{
						"parallelism": int64(pods), "completions": int64(pods), "completionMode": "Indexed",
						"backoffLimit": int64(0),
						"template":     podTemplate,
					}},
				}},
				"failurePolicy": map[string]any{"maxRestarts": int64(100)},
			},
		}}
		_, err = e.Dyn.Resource(schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}).
			Namespace(ns).Create(ctx, js, metav1.CreateOptions{})
		return err
	}
	return s
}

// RestartStorm deletes the pods of `of` (already Running) at once: their Job fails, and the
// JobSet controller makes it and all its pods again.
func RestartStorm(of *Storm) *Storm {
	return &Storm{Name: "restart", Pods: of.Pods, Pod: of.Pod, Selector: of.Selector, Restart: true,
		Start: func(ctx context.Context, e *Env, ns string) error {
			grace := int64(0)
			return e.CS.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace},
				metav1.ListOptions{LabelSelector: of.Selector})
		}}
}

// servingPod is a vLLM server of 8 GPUs, sized from its launch by the webhook.
func servingPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{stormLabel: "serving", "app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{gpuContainer([]string{"vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct",
				"--tensor-parallel-size", "8"}, 8)},
			Tolerations:  []corev1.Toleration{controlplane.FleetToleration},
			NodeSelector: controlplane.FleetSelector,
		},
	}
}

// DeploymentStorm is `deployments` vLLM Deployments created with 0 replicas and scaled at once
// to pods/deployments each.
func DeploymentStorm(deployments, pods int) *Storm {
	s := &Storm{Name: "deployments", Pods: pods - pods%deployments, Selector: stormLabel + "=serving",
		Pod: func() *corev1.Pod { return servingPod("vllm-0") }}
	s.Start = func(ctx context.Context, e *Env, ns string) error {
		apps := e.CS.AppsV1().Deployments(ns)
		for i := 0; i < deployments; i++ {
			name := fmt.Sprintf("vllm-%d", i)
			pod := servingPod(name)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}}}
			if _, err := apps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, deployments)
		for i := 0; i < deployments; i++ {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				if err := Scale(ctx, e.CS, ns, name, int32(pods/deployments)); err != nil {
					errs <- err
				}
			}(fmt.Sprintf("vllm-%d", i))
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	return s
}

// Scale sets a Deployment's replicas by a merge patch of its scale, as `kubectl scale` without
// --resource-version does: the Deployment controller writing its status meanwhile is no
// conflict, as it is for a read and an update of the scale.
func Scale(ctx context.Context, cs kubernetes.Interface, namespace, name string, replicas int32) error {
	body := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := cs.AppsV1().Deployments(namespace).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "scale")
	return err
}
