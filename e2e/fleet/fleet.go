// Package fleet runs storms of GPU pods over KWOK's fake nodes (controlplane.StartFleet) in
// each of shmguard's modes, with faults in the middle, and measures what the API server and
// shmguard's replicas saw and how many GPU pods came out without the /dev/shm shmguard gives.
// The node suite runs a small storm (e2e/node/fleet_test.go); bench/fleet.sh the full ones.
package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

// Mode is how shmguard reaches a storm's namespace.
type Mode string

const (
	None    Mode = "none"    // neither the webhook nor policies: the baseline
	Webhook Mode = "webhook" // the chart's webhooks
	Policy  Mode = "policy"  // the exported admission policies alone
	Hybrid  Mode = "hybrid"  // the webhooks over the hybrid floor
)

// The labels that keep the exported policies away from a namespace (their --enabled-label).
const (
	policyLabel = "shmguard.io/fleet-policy"
	hybridLabel = "shmguard.io/fleet-hybrid"
	enabled     = "shmguard.io/enabled"
)

// labels are a mode's namespace labels: each of the three opted out but its own.
func (m Mode) labels() map[string]string {
	switch m {
	case Webhook:
		return map[string]string{policyLabel: "false", hybridLabel: "false"}
	case Policy:
		return map[string]string{enabled: "false", hybridLabel: "false"}
	case Hybrid:
		return map[string]string{policyLabel: "false"}
	}
	return map[string]string{enabled: "false", policyLabel: "false", hybridLabel: "false"}
}

// Env is the control plane the storms run on.
type Env struct {
	CP  *controlplane.State
	CS  *kubernetes.Clientset
	Dyn dynamic.Interface
	Log func(format string, args ...any)
}

// NewEnv connects to cp as the admin.
func NewEnv(cp *controlplane.State, log func(string, ...any)) (*Env, error) {
	cfg, err := cp.RestConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	return &Env{CP: cp, CS: cs, Dyn: dyn, Log: log}, nil
}

// InstallPolicies creates the exported policies of policy mode and of hybrid mode, each bound
// to the namespaces not labelled against it, from the policy the chart installed; the returned
// function deletes them.
func (e *Env) InstallPolicies(ctx context.Context) (func(), error) {
	cm, err := e.CS.CoreV1().ConfigMaps(controlplane.ReleaseNamespace).Get(ctx, controlplane.ReleaseName+"-policy", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	policy := e.CP.Path("fleet-policy.yaml")
	if err := writeFile(policy, cm.Data["policy.yaml"]); err != nil {
		return nil, err
	}
	var created []*unstructured.Unstructured
	undo := func() {
		for _, u := range created {
			gvr, _ := resourceOf(u)
			_ = e.Dyn.Resource(gvr).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
		}
	}
	for _, p := range []struct{ mode, label string }{{"policy", policyLabel}, {"hybrid", hybridLabel}} {
		args := []string{"policy", "export", "--mode", p.mode, "--config", policy, "--name", "fleet-" + p.mode,
			"--enabled-label", p.label}
		for _, ns := range []string{"kube-system", "kube-public", "kube-node-lease", controlplane.ReleaseNamespace, "shmguard-agent"} {
			args = append(args, "--exclude-namespace", ns)
		}
		out, err := exec.CommandContext(ctx, e.CP.Shmguard, args...).Output()
		if err != nil {
			undo()
			return nil, fmt.Errorf("shmguard %s: %w", strings.Join(args, " "), err)
		}
		docs, err := controlplane.SplitYAML(out)
		if err != nil {
			undo()
			return nil, err
		}
		for _, doc := range docs {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil || len(u.Object) == 0 {
				continue
			}
			gvr, _ := resourceOf(u)
			if _, err := e.Dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				undo()
				return nil, fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
			}
			created = append(created, u)
		}
	}
	// In force: a GPU pod gets each export's plan where only it reaches.
	for _, m := range []Mode{Policy, Hybrid} {
		labels := map[string]string{enabled: "false", policyLabel: "false", hybridLabel: "false"}
		delete(labels, map[Mode]string{Policy: policyLabel, Hybrid: hybridLabel}[m])
		ns, err := e.CS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "fleet-probe-", Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			undo()
			return nil, err
		}
		err = waitPlan(ctx, e, ns.Name, JobSetStorm(1).Pod(), func(plan string) bool {
			return strings.Contains(plan, `"policyMode":true`)
		})
		_ = e.CS.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil {
			undo()
			return nil, fmt.Errorf("the %s policies not in force: %w", m, err)
		}
	}
	return undo, nil
}

// waitPlan creates pod (dry run) in ns until its plan annotation is one `ok` accepts, for a
// minute at most.
func waitPlan(ctx context.Context, e *Env, ns string, pod *corev1.Pod, ok func(string) bool) error {
	_, err := waitPod(ctx, e, ns, pod, func(p *corev1.Pod) error {
		if plan := p.Annotations["shmguard.io/plan"]; !ok(plan) {
			return fmt.Errorf("plan %q", plan)
		}
		return nil
	})
	return err
}

// waitPod creates pod (dry run) in ns until what comes out passes `check`, for a minute at most,
// and returns it; else check's last error.
func waitPod(ctx context.Context, e *Env, ns string, pod *corev1.Pod, check func(*corev1.Pod) error) (*corev1.Pod, error) {
	pod = pod.DeepCopy()
	pod.Name = "probe"
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := e.CS.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			if err = check(got); err == nil {
				return got, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// inForce says why a dry-run pod does not yet come out as mode m makes it: with the plan
// annotation the mode writes (none: no plan), or for a peer's mode with a /dev/shm.
func (m Mode) inForce(p *corev1.Pod) error {
	plan := p.Annotations["shmguard.io/plan"]
	policyMade := strings.Contains(plan, `"policyMode":true`)
	switch {
	case m.IsPeer():
		if ShmOf(&p.Spec) == "" {
			return fmt.Errorf("no /dev/shm")
		}
		return nil
	case m == None && plan == "", m == Policy && policyMade, m != None && m != Policy && plan != "" && !policyMade:
		return nil
	}
	return fmt.Errorf("plan %q", plan)
}

// Namespace creates a namespace for a storm in mode m and waits until the mode is in force there
// (Mode.inForce of a dry-run pod of the storm's template). A peer's namespace is named as the
// GPU namespaces Gatekeeper's mutators match (train-*). It returns the namespace and that pod's
// /dev/shm, the size every pod of the storm must get.
func (e *Env) Namespace(ctx context.Context, m Mode, s *Storm) (string, string, error) {
	prefix := "fleet-" + string(m) + "-"
	if m.IsPeer() {
		prefix = "train-" + prefix
	}
	ns, err := e.CS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix, Labels: m.labels()}}, metav1.CreateOptions{})
	if err != nil {
		return "", "", err
	}
	got, err := waitPod(ctx, e, ns.Name, s.Pod(), m.inForce)
	if err != nil {
		return "", "", fmt.Errorf("mode %s not in force in %s: %w", m, ns.Name, err)
	}
	return ns.Name, ShmOf(&got.Spec), nil
}

// DeleteNamespace deletes ns and waits until its pods are gone (KWOK's pod-delete stage ends
// them).
func (e *Env) DeleteNamespace(ctx context.Context, ns string) error {
	if err := e.CS.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		list, err := e.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the pods of %s not gone: %w", ns, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// ShmOf is the sizeLimit of the memory emptyDir a pod's first container mounts at /dev/shm,
// "" without one, "unbounded" without a sizeLimit.
func ShmOf(spec *corev1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.MountPath != "/dev/shm" {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
				if v.EmptyDir.SizeLimit == nil {
					return "unbounded"
				}
				return v.EmptyDir.SizeLimit.String()
			}
		}
	}
	return ""
}

// gpuContainer is the container of every storm's pods: 8 GPUs of a fake node, its command the
// workload's, an image nothing pulls (KWOK runs no containers).
func gpuContainer(command []string, gpus int) corev1.Container {
	limits := corev1.ResourceList{
		controlplane.GPUResource: *resource.NewQuantity(int64(gpus), resource.DecimalSI),
		corev1.ResourceMemory:    resource.MustParse("512Gi"),
	}
	return corev1.Container{Name: "main", Image: "registry.invalid/gpu-workload:1", Command: command,
		Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}
}

func writeFile(path, text string) error {
	return os.WriteFile(path, []byte(text), 0o644)
}

// resourceOf is the resource of an object of admissionregistration.k8s.io (the exported
// policies), cluster-scoped.
func resourceOf(u *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	plural := strings.ToLower(u.GetKind())
	if strings.HasSuffix(plural, "y") {
		plural = strings.TrimSuffix(plural, "y") + "ies"
	} else {
		plural += "s"
	}
	return gv.WithResource(plural), false
}
