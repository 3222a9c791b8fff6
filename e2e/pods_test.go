package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// createFile creates the one object of a fixture in ns and returns what was stored.
func createFile(t *testing.T, ns, file string) (*unstructured.Unstructured, []string) {
	t.Helper()
	objs := readObjects(t, file)
	if len(objs) != 1 {
		t.Fatalf("%s: %d objects, want 1", file, len(objs))
	}
	stored, warns, err := createObject(t, ns, objs[0], false)
	if err != nil {
		t.Fatalf("creating %s: %v", file, err)
	}
	return stored, warns
}

func asPod(t *testing.T, u *unstructured.Unstructured) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// shmOf describes what shmguard's patch puts in a pod spec: the memory emptyDir's size at
// /dev/shm (nil without one), hostIPC, and whether every GPU container has IPC_LOCK.
type shmOf struct {
	size    *resource.Quantity
	hostIPC bool
	ipcLock bool
}

func readShm(spec *corev1.PodSpec) shmOf {
	var s shmOf
	s.hostIPC = spec.HostIPC
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			for _, m := range spec.Containers[0].VolumeMounts {
				if m.Name == v.Name && m.MountPath == "/dev/shm" {
					s.size = v.EmptyDir.SizeLimit
				}
			}
		}
	}
	s.ipcLock = true
	for _, c := range spec.Containers {
		if _, gpu := c.Resources.Limits["nvidia.com/gpu"]; !gpu {
			continue
		}
		has := false
		if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil {
			for _, a := range c.SecurityContext.Capabilities.Add {
				has = has || a == "IPC_LOCK"
			}
		}
		s.ipcLock = s.ipcLock && has
	}
	return s
}

// expectPatchedLikeAudit checks that the stored object holds every field of `shmguard audit -o
// patched` of the same file, and that the audit did patch it.
func expectPatchedLikeAudit(t *testing.T, file string, stored *unstructured.Unstructured) {
	t.Helper()
	records := audit(t, nil, file)
	if len(records) != 1 || records[0].Verdict != "patch" {
		t.Fatalf("shmguard audit %s: want one record with verdict patch, got %+v", file, records)
	}
	patched := auditPatched(t, file)
	if len(patched) != 1 {
		t.Fatalf("shmguard audit -o patched %s: %d objects", file, len(patched))
	}
	if diff := missingFrom(patched[0].Object, stored.Object, ""); len(diff) > 0 {
		t.Errorf("the stored %s lacks what shmguard audit -o patched gives:\n  %s", stored.GetKind(), strings.Join(diff, "\n  "))
	}
}

func TestPods(t *testing.T) {
	ns := newNamespace(t, nil)

	t.Run("an unannotated 4-GPU pod is stored as shmguard audit -o patched gives it, with no privilege", func(t *testing.T) {
		stored, _ := createFile(t, ns, "testdata/pods/unannotated-4gpu.yaml")
		expectPatchedLikeAudit(t, "testdata/pods/unannotated-4gpu.yaml", stored)
		got := readShm(&asPod(t, stored).Spec)
		if got.size == nil || got.hostIPC || got.ipcLock {
			t.Errorf("stored pod: dshm %v, hostIPC %v, IPC_LOCK %v; want dshm only (no RDMA, one pod)", got.size, got.hostIPC, got.ipcLock)
		}
		if stored.GetAnnotations()["shmguard.io/plan"] == "" {
			t.Error("stored pod has no shmguard.io/plan annotation")
		}
	})

	t.Run("a root container on RDMA gets IPC_LOCK; a non-root one gets none and a warning", func(t *testing.T) {
		stored, _ := createFile(t, ns, "testdata/pods/rdma-root.yaml")
		expectPatchedLikeAudit(t, "testdata/pods/rdma-root.yaml", stored)
		if got := readShm(&asPod(t, stored).Spec); got.size == nil || !got.ipcLock || got.hostIPC {
			t.Errorf("root RDMA pod: dshm %v, IPC_LOCK %v, hostIPC %v; want dshm and IPC_LOCK", got.size, got.ipcLock, got.hostIPC)
		}
		stored, warns := createFile(t, ns, "testdata/pods/rdma-non-root.yaml")
		if got := readShm(&asPod(t, stored).Spec); got.size == nil || got.ipcLock || got.hostIPC {
			t.Errorf("non-root RDMA pod: dshm %v, IPC_LOCK %v, hostIPC %v; want dshm only", got.size, got.ipcLock, got.hostIPC)
		}
		if !strings.Contains(strings.Join(warns, "\n"), "LimitMEMLOCK") {
			t.Errorf("the API server relayed %q; want shmguard's ipc-lock-non-root warning naming LimitMEMLOCK", warns)
		}
	})

	t.Run("an annotated pod is stored with the exact planned size", func(t *testing.T) {
		stored, _ := createFile(t, ns, "testdata/pods/annotated.yaml")
		out, code := runShmguard(t, nil, "plan", "--num-workers", "8", "--batch-bytes", "160Mi", "--gpus", "2",
			"--memory-limit", "64Gi", "-o", "json")
		if code != 0 {
			t.Fatalf("shmguard plan: exit %d: %s", code, out)
		}
		var plan struct {
			Required string `json:"required"`
		}
		if err := json.Unmarshal([]byte(out), &plan); err != nil {
			t.Fatal(err)
		}
		got := readShm(&asPod(t, stored).Spec)
		if got.size == nil || got.size.String() != plan.Required {
			t.Errorf("stored dshm sizeLimit %v, shmguard plan says %s", got.size, plan.Required)
		}
		expectPatchedLikeAudit(t, "testdata/pods/annotated.yaml", stored)
	})

	t.Run("a CPU-only pod never reaches shmguard", func(t *testing.T) {
		// The API server's own CEL (matchConditions) keeps it away: shmguard's request
		// counter does not move, and it logs nothing about the pod.
		before := metric(t, "shmguard_admission_requests_total", nil)
		stored, _ := createFile(t, ns, "testdata/pods/cpu-only.yaml")
		if after := metric(t, "shmguard_admission_requests_total", nil); after != before {
			t.Errorf("shmguard_admission_requests_total went from %v to %v for a CPU-only pod", before, after)
		}
		if readShm(&asPod(t, stored).Spec).size != nil {
			t.Error("the CPU-only pod got a dshm volume")
		}
		time.Sleep(1200 * time.Millisecond) // the log is flushed every second
		for _, d := range decisions(t, ns) {
			if strings.HasSuffix(d.Object, "/cpu-only") {
				t.Errorf("shmguard logged a decision about the CPU-only pod: %+v", d)
			}
		}
	})

	t.Run("a pod marked shmguard.io/mode skip is stored as sent", func(t *testing.T) {
		sent := readObjects(t, "testdata/pods/skip.yaml")[0]
		stored, _ := createFile(t, ns, "testdata/pods/skip.yaml")
		if diff := missingFrom(sent.Object, stored.Object, ""); len(diff) > 0 {
			t.Errorf("stored pod differs from what was sent: %v", diff)
		}
		got := readShm(&asPod(t, stored).Spec)
		if got.size != nil || got.hostIPC {
			t.Errorf("the skipped pod was patched: %+v", got)
		}
		if _, ok := stored.GetAnnotations()["shmguard.io/plan"]; ok {
			t.Error("the skipped pod carries shmguard.io/plan")
		}
	})
}
