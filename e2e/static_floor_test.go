package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
)

// The hybrid floor as kube-apiserver's static manifests (`shmguard policy export --static`,
// KEP-5793): an API server of the test's own loads them before it serves. The first GPU pod it
// admits, in the first second it serves, is sized; every pod gets what the same floor created
// through the API gives it on the main control plane; the floor is no API object, so nothing can
// delete it, and the API refuses an object with its reserved name; after etcd was down and the
// API server restarted, it sizes the first pod again; and with the webhook registered but every
// replica down, every GPU pod created is sized by the floor.
func TestStaticFloorSizesFromTheFirstSecondAndCannotBeDeleted(t *testing.T) {
	dir := t.TempDir()
	out, code := runShmguard(t, nil, "policy", "export", "--mode", "hybrid", "--config", cp.ShmguardPolicy(),
		"--name", "shmguard-floor", "--static", filepath.Join(dir, "static"))
	if code != 0 {
		t.Fatalf("shmguard policy export --static: exit %d\n%s", code, out)
	}
	config := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(config, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	plane, err := cp.StartStaticPlane(filepath.Join(dir, "plane"), config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop)
	served := time.Now()
	static, err := plane.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	first := staticProbe(t, static, "first")
	if took := time.Since(served); took > time.Second {
		t.Errorf("the first pod took %s after the API server was ready", took)
	}
	t.Logf("first GPU pod, created %.0f ms after the API server was ready: /dev/shm %s, plan %s",
		time.Since(served).Seconds()*1000, first.size, first.plan)

	// The same floor through the API, on the main control plane, gives every pod the same (in a
	// namespace the webhook leaves alone and the floor's own label does not).
	applyPolicyMode(t, "shmguard-floor", cp.ShmguardPolicy(), "shmguard.io/static-reference", "hybrid")
	reference := newNamespaceNamed(t, "floor", map[string]string{"shmguard.io/enabled": "false"})
	pods := append(edgePodsOf(t), everyPod(t)...)
	waitForPolicies(t, reference, pods[0])
	dyn := staticDynamic(t, plane)
	same, refused := 0, 0
	for i, u := range preparedPods(pods) {
		want, _, errWant := createObject(t, reference, u, true)
		got, errGot := dyn.create(u)
		if errWant != nil || errGot != nil {
			if (errWant == nil) != (errGot == nil) {
				t.Errorf("pod %d: through the API %v, static %v\n%s", i, errWant, errGot, compact(u.Object))
			}
			refused++
			continue
		}
		w, wPlan := normalised(want)
		g, gPlan := normalised(got)
		if w != g || wPlan != gPlan {
			t.Errorf("pod %d differs from the API floor's:\nAPI:    %s (plan %s)\nstatic: %s (plan %s)", i, w, wPlan, g, gPlan)
			continue
		}
		same++
	}
	t.Logf("%d pods: %d as the floor through the API gives them, %d refused alike", len(pods), same, refused)

	// No API object to delete: the floor answers after the attempts.
	name := "shmguard-floor" + ".static.k8s.io"
	mutating := static.AdmissionregistrationV1().MutatingAdmissionPolicies()
	if err := mutating.Delete(ctxFor(t), name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s through the API: %v, want NotFound (it is no API object)", name, err)
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}}
	if _, err := static.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctxFor(t), binding,
		metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "reserved for static manifest-based configurations") {
		t.Errorf("creating a binding named %s through the API: %v, want it refused as reserved", name, err)
	}
	if p := staticProbe(t, static, "after-delete"); p.size != first.size {
		t.Errorf("after the delete: /dev/shm %s, want %s", p.size, first.size)
	}

	// etcd down, the API server restarted: once both are back, the first pod is sized.
	if err := plane.StopEtcd(); err != nil {
		t.Fatal(err)
	}
	if err := plane.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := plane.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // it starts, and waits for etcd
	if err := plane.StartEtcd(); err != nil {
		t.Fatal(err)
	}
	if err := plane.WaitReady(90 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p := staticProbe(t, static, "after-etcd"); p.size != first.size {
		t.Errorf("after etcd was down: /dev/shm %s, want %s", p.size, first.size)
	}

	// Hybrid with every webhook replica down: the chart's webhook registered at a port nothing
	// listens on (failurePolicy Ignore, as the chart has it); each GPU pod is sized by the floor.
	m, _, err := cp.WebhookConfigurations("mode=hybrid")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Webhooks {
		url := strings.Replace(*m.Webhooks[i].ClientConfig.URL, cp.WebhookURL(""), "https://127.0.0.1:"+strconv.Itoa(closed), 1)
		m.Webhooks[i].ClientConfig.URL = &url
	}
	m.ResourceVersion = ""
	if _, err := static.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctxFor(t), m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the API server's webhook informer
	const outage = 20
	for i := 0; i < outage; i++ {
		if p := staticProbe(t, static, "outage-"+strconv.Itoa(i)); p.size != first.size {
			t.Errorf("pod %d created while the webhook is down: /dev/shm %s, want %s", i, p.size, first.size)
		}
	}
	t.Logf("%d GPU pods created with the webhook registered and down: each sized %s by the static floor", outage, first.size)
}

// probed is what a probe pod came out with: its dshm's sizeLimit and its plan annotation.
type probed struct{ size, plan string }

// staticProbe creates (for real) a GPU training pod on the static control plane, its
// ServiceAccount first where the namespace has none yet (no controllers run there).
func staticProbe(t *testing.T, c kubernetes.Interface, name string) probed {
	t.Helper()
	ctx := ctxFor(t)
	if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-" + name, Annotations: map[string]string{
			"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "160Mi"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "train",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("64Gi")}}}}},
	}
	got, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s on the static control plane: %v", pod.Name, err)
	}
	var p probed
	for _, v := range got.Spec.Volumes {
		if v.Name == "dshm" && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			p.size = v.EmptyDir.SizeLimit.String()
		}
	}
	p.plan = got.Annotations["shmguard.io/plan"]
	if p.size == "" || !strings.Contains(p.plan, `"policyMode":true`) {
		t.Fatalf("%s was not sized by the floor: volumes %+v, plan %q", pod.Name, got.Spec.Volumes, p.plan)
	}
	return p
}

// staticObjects creates pods on the static control plane (dry run), as createObject does on the
// main one.
type staticObjects struct{ pods dynamic.ResourceInterface }

func staticDynamic(t *testing.T, plane *controlplane.StaticPlane) staticObjects {
	cfg, err := plane.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return staticObjects{dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("default")}
}

func (s staticObjects) create(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return s.pods.Create(context.Background(), u.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}
