package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A pod that gets its GPUs through Dynamic Resource Allocation names only a claim template; the
// webhook (shmguard-webhook --resource-claims, with the chart's read-only RBAC) keeps the templates from a
// watch, so the pod's container counts the template's gpu.nvidia.com devices: its 4 GPUs and
// torchrun's 4 processes get the multi-GPU /dev/shm. A template of another device class gives
// no GPUs, and the pod is left alone.
func TestAPodWithGpusFromAResourceClaimTemplateIsSized(t *testing.T) {
	// shmguard reads claims through resource.k8s.io/v1, DRA's GA API (Kubernetes 1.34 on; beta and
	// off by default before it).
	if _, err := client.Discovery().ServerResourcesForGroupVersion("resource.k8s.io/v1"); err != nil {
		v, _ := client.Discovery().ServerVersion()
		t.Skipf("Kubernetes %s serves no resource.k8s.io/v1 (DRA is GA from 1.34): %v", v.GitVersion, err)
	}
	ns := newNamespace(t, nil)
	template := func(name, class string) *unstructured.Unstructured {
		return object(t, fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: %s}
spec:
  spec:
    devices:
      requests:
      - name: devices
        exactly: {deviceClassName: %s, allocationMode: ExactCount, count: 4}
`, name, class))
	}
	for _, tpl := range []*unstructured.Unstructured{template("four-gpus", "gpu.nvidia.com"), template("four-nics", "dranet.net")} {
		if _, _, err := createObject(t, ns, tpl, false); err != nil {
			t.Fatalf("creating the ResourceClaimTemplate %s: %v", tpl.GetName(), err)
		}
	}
	pod := func(name, claimTemplate string) *unstructured.Unstructured {
		return object(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  resourceClaims:
  - {name: devices, resourceClaimTemplateName: %s}
  containers:
  - name: train
    image: pytorch
    command: [torchrun, --nproc_per_node=4, train.py]
    resources:
      claims: [{name: devices}]
      limits: {memory: 64Gi}
`, name, claimTemplate))
	}
	// The watch sees the template within moments: dry runs until the pod is sized.
	var dry *unstructured.Unstructured
	eventually(t, 20*time.Second, "the webhook to count the template's GPUs", func() error {
		var err error
		if dry, _, err = createObject(t, ns, pod("dry", "four-gpus"), true); err != nil {
			return err
		}
		if plan := dry.GetAnnotations()["shmguard.io/plan"]; !strings.Contains(plan, `"gpus":4`) {
			return fmt.Errorf("shmguard.io/plan %q", plan)
		}
		return nil
	})
	stored, _, err := createObject(t, ns, pod("trainer", "four-gpus"), false)
	if err != nil {
		t.Fatal(err)
	}
	if plan := stored.GetAnnotations()["shmguard.io/plan"]; !strings.Contains(plan, `"gpus":4`) || !strings.Contains(plan, `"procs":4`) {
		t.Errorf("the stored pod's shmguard.io/plan is %q: want 4 GPUs and 4 procs", plan)
	}
	volumes, _, _ := unstructured.NestedSlice(stored.Object, "spec", "volumes")
	if !strings.Contains(fmt.Sprint(volumes), "medium:Memory") || !strings.Contains(fmt.Sprint(volumes), "name:dshm") {
		t.Errorf("the stored pod's volumes are %v: want a memory emptyDir dshm", volumes)
	}
	other, _, err := createObject(t, ns, pod("nics", "four-nics"), false)
	if err != nil {
		t.Fatal(err)
	}
	if plan, ok := other.GetAnnotations()["shmguard.io/plan"]; ok {
		t.Errorf("a pod whose claim holds no GPUs got shmguard.io/plan %q", plan)
	}
}

// object is a manifest as an unstructured object.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
