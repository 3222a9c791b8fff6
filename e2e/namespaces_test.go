package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaces(t *testing.T) {
	gpuPod := "testdata/pods/unannotated-4gpu.yaml"

	t.Run("nothing changes in kube-system", func(t *testing.T) {
		pod := readObjects(t, gpuPod)[0]
		pod.SetName("shmguard-e2e-untouched")
		stored, _, err := createObject(t, "kube-system", pod, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := readShm(&asPod(t, stored).Spec); got.size != nil || got.hostIPC || got.ipcLock {
			t.Errorf("a GPU pod in kube-system was patched: %+v", got)
		}
	})

	t.Run("nothing changes in a namespace labelled shmguard.io/enabled=false", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{"shmguard.io/enabled": "false"})
		stored, _ := createFile(t, ns, gpuPod)
		if got := readShm(&asPod(t, stored).Spec); got.size != nil || got.hostIPC || got.ipcLock {
			t.Errorf("a GPU pod in an opted-out namespace was patched: %+v", got)
		}
	})

	t.Run("Pod Security baseline admits the GPU pod with dshm, without hostIPC or IPC_LOCK", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
		stored, warns := createFile(t, ns, gpuPod)
		pod := asPod(t, stored)
		got := readShm(&pod.Spec)
		if got.size == nil {
			t.Error("no dshm volume under baseline")
		}
		if got.hostIPC {
			t.Error("hostIPC added under baseline")
		}
		for _, c := range pod.Spec.Containers {
			if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && len(c.SecurityContext.Capabilities.Add) > 0 {
				t.Errorf("capabilities added under baseline: %v", c.SecurityContext.Capabilities.Add)
			}
		}
		if !containsAny(warns, "baseline") {
			t.Errorf("no warning says what was left out under baseline: %q", warns)
		}

		// What the routing prevents: the same pod with hostIPC is refused by PodSecurity.
		withHostIPC := readObjects(t, gpuPod)[0]
		withHostIPC.SetName("with-host-ipc")
		if err := setNested(withHostIPC.Object, true, "spec", "hostIPC"); err != nil {
			t.Fatal(err)
		}
		_, _, err := createObject(t, ns, withHostIPC, false)
		if err == nil || !strings.Contains(statusMessage(err), "violates PodSecurity \"baseline") ||
			!strings.Contains(statusMessage(err), "hostIPC") {
			t.Errorf("PodSecurity baseline admitted a pod with hostIPC, or refused it for another reason: %v", err)
		}
	})

	t.Run("Pod Security restricted admits a restricted-compliant GPU pod with dshm", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		stored, _ := createFile(t, ns, "testdata/pods/restricted.yaml")
		got := readShm(&asPod(t, stored).Spec)
		if got.size == nil || got.hostIPC {
			t.Errorf("under restricted: dshm %v, hostIPC %v; want dshm and no hostIPC", got.size, got.hostIPC)
		}
	})

	t.Run("shmguard.io/enforce=true refuses what shmguard must deny, with its message", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{"shmguard.io/enforce": "true"})
		records := audit(t, nil, "testdata/pods/too-big.yaml")
		if len(records) != 1 || records[0].Verdict != "deny" {
			t.Fatalf("shmguard audit: want deny, got %+v", records)
		}
		pod := readObjects(t, "testdata/pods/too-big.yaml")[0]
		_, _, err := createObject(t, ns, pod, false)
		msg := statusMessage(err)
		if err == nil || !strings.Contains(msg, `admission webhook "validate-enforce.shmguard.io" denied the request: shmguard denied Pod `+ns+"/too-big") {
			t.Fatalf("want shmguard's denial, got %v", err)
		}
		for _, r := range records[0].problems(true) {
			if !strings.Contains(msg, r) {
				t.Errorf("the denial lacks the audit's reason %q:\n%s", r, msg)
			}
		}
	})

	t.Run("in a warn namespace kubectl apply prints shmguard's warnings", func(t *testing.T) {
		ns := newNamespace(t, nil)
		stdout, stderr, err := kubectl(t, nil, "apply", "-n", ns, "-f", "e2e/testdata/pods/too-big.yaml")
		if err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, stderr)
		}
		if !strings.Contains(stdout, "pod/too-big created") || !strings.Contains(stderr, "Warning: shmguard: ") {
			t.Errorf("kubectl apply printed no shmguard warning:\nstdout: %s\nstderr: %s", stdout, stderr)
		}
		records := audit(t, nil, "testdata/pods/too-big.yaml")
		if plan := records[0].first("shm-plan"); !strings.Contains(stderr, firstWords(plan, 8)) {
			t.Errorf("the warnings do not carry the audit's plan %q:\n%s", plan, stderr)
		}
		_ = client.CoreV1().Pods(ns).Delete(ctxFor(t), "too-big", metav1.DeleteOptions{})
	})
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

func setNested(obj map[string]any, value any, fields ...string) error {
	m := obj
	for _, f := range fields[:len(fields)-1] {
		next, ok := m[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	m[fields[len(fields)-1]] = value
	return nil
}
