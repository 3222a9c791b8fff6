package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"shmguard.io/e2e/controlplane"
)

var shmProfiles = schema.GroupVersionResource{Group: "shmguard.io", Version: "v1alpha1", Resource: "shmprofiles"}

// dshmSize is the sizeLimit of the dshm volume the webhook gave a pod of Job `job` (dry run).
func dshmSize(t *testing.T, ns, job string) int64 {
	t.Helper()
	p := controlplane.GPUPod("", 1, "8Gi")
	p.GenerateName = job + "-"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job,
		UID: types.UID("00000000-0000-0000-0000-000000000001"), Controller: ptrTo(true)}}
	got, err := client.CoreV1().Pods(ns).Create(ctxFor(t), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got.Spec.Volumes {
		if v.Name == "dshm" && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			return v.EmptyDir.SizeLimit.Value()
		}
	}
	return 0
}

func ptrTo[T any](v T) *T { return &v }

// The webhook keeps the ShmProfiles from a watch of the real API server, read with its chart's
// ServiceAccount and nothing more: a profile created, raised and deleted changes the size the
// next pod of its workload gets, within moments, and another workload's pods are untouched.
func TestTheWebhookSizesFromTheProfilesItWatches(t *testing.T) {
	dyn, err := dynamic.NewForConfig(mustRestConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, nil)
	const formula = 2 << 30 // a 1-GPU pod's estimate: 25 % of 8Gi
	if got := dshmSize(t, ns, "learn"); got != formula {
		t.Fatalf("without a profile: %d, want the estimate %d", got, formula)
	}
	profile := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "shmguard.io/v1alpha1", "kind": "ShmProfile",
		"metadata": map[string]any{"name": "job.learn"},
		"spec":     map[string]any{"workload": "Job/learn"},
		"status": map[string]any{"peakBytes": int64(1200 << 20), "sizeBytes": int64(1 << 30), "runs": int64(2),
			"lastObserved": "2026-11-25T10:00:00Z", "lastPod": "learn-x"},
	}}
	start := time.Now()
	created, err := dyn.Resource(shmProfiles).Namespace(ns).Create(ctxFor(t), profile, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sizes := func(want int64, what string) {
		t.Helper()
		start := time.Now()
		eventually(t, 10*time.Second, what, func() error {
			if got := dshmSize(t, ns, "learn"); got != want {
				return fmt.Errorf("%d bytes, want %d", got, want)
			}
			return nil
		})
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}
	sizes(1800<<20, "the profile's peak × 1.5 sizes the next pod")
	t.Logf("from the profile's create to a pod sized from it: %v", time.Since(start).Round(time.Millisecond))
	if got := dshmSize(t, ns, "other"); got != formula {
		t.Errorf("another Job's pod: %d, want the estimate %d", got, formula)
	}
	if err := unstructured.SetNestedField(created.Object, int64(1600<<20), "status", "peakBytes"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(shmProfiles).Namespace(ns).Update(ctxFor(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sizes(2400<<20, "a raised peak")
	if err := dyn.Resource(shmProfiles).Namespace(ns).Delete(ctxFor(t), "job.learn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sizes(formula, "the profile deleted")
	if n := metric(t, "shmguard_observations_synced", nil); n != 1 {
		t.Errorf("shmguard_observations_synced %v", n)
	}
}

// The webhook's token (its chart ServiceAccount's) reads ShmProfiles and nothing else.
func TestTheWebhooksTokenOnlyReadsProfiles(t *testing.T) {
	cfg := rest.CopyConfig(mustRestConfig(t))
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	cfg.BearerTokenFile = cp.ObservationsToken()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(shmProfiles).List(ctxFor(t), metav1.ListOptions{}); err != nil {
		t.Errorf("the webhook's token cannot list ShmProfiles: %v", err)
	}
	refused := map[string]error{}
	_, refused["list pods"] = cs.CoreV1().Pods("").List(ctxFor(t), metav1.ListOptions{})
	_, refused["list secrets"] = cs.CoreV1().Secrets(controlplane.ReleaseNamespace).List(ctxFor(t), metav1.ListOptions{})
	_, refused["create a ShmProfile"] = dyn.Resource(shmProfiles).Namespace("default").Create(ctxFor(t),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "shmguard.io/v1alpha1", "kind": "ShmProfile",
			"metadata": map[string]any{"name": "job.x"}, "spec": map[string]any{"workload": "Job/x"}}},
		metav1.CreateOptions{})
	_, refused["create a pod"] = cs.CoreV1().Pods("default").Create(ctxFor(t), &corev1.Pod{}, metav1.CreateOptions{})
	for what, err := range refused {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the webhook's token may %s (%v)", what, err)
		}
	}
}
