package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		// A root RDMA pod: under privileged it would get IPC_LOCK.
		stored, warns := createFile(t, ns, "testdata/pods/rdma-root.yaml")
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
		if !containsAny(warns, "IPC_LOCK not added: Pod Security baseline forbids it") {
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

// Where nothing can be denied (warn, the default), a GPU pod costs the API server one webhook
// call: the mutating one, whose answer carries the warnings. In a namespace labelled for
// enforcement, the validating webhook is called after it. A policy rule `mode: enforce`, which no
// namespaceSelector can express, brings the validating call back everywhere.
func TestOneWebhookCallPerGPUPodWhereNothingCanBeDenied(t *testing.T) {
	calls := func(endpoint string) float64 {
		return metric(t, "shmguard_admission_requests_total", map[string]string{"endpoint": endpoint, "kind": "Pod"})
	}
	for _, c := range []struct {
		name      string
		labels    map[string]string
		validates bool
	}{
		{"warn", nil, false},
		{"enforce", map[string]string{"shmguard.io/enforce": "true"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := newNamespace(t, c.labels)
			mutate, validate := calls("mutate"), calls("validate")
			pod := readObjects(t, "testdata/pods/too-big.yaml")[0] // what shmguard would deny: warned, or denied
			if _, warns, err := createObject(t, ns, pod, false); c.validates {
				if err == nil {
					t.Fatalf("a pod shmguard denies was admitted in an enforce namespace (warnings %q)", warns)
				}
			} else if err != nil || len(warns) == 0 {
				t.Fatalf("in a warn namespace: %v, warnings %q", err, warns)
			}
			eventually(t, 5*time.Second, "the calls counted", func() error {
				if got := calls("mutate") - mutate; got != 1 {
					return fmt.Errorf("%v mutating calls", got)
				}
				return nil
			})
			if got, want := calls("validate")-validate, map[bool]float64{true: 1, false: 0}[c.validates]; got != want {
				t.Errorf("%v validating calls, want %v", got, want)
			}
		})
	}
	docs, err := cp.RenderChart("policy.namespaces[0].match[0]=ml-*", "policy.namespaces[0].mode=enforce")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range parseObjects(t, bytes.Join(docs, []byte("\n---\n"))) {
		if o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			if !strings.Contains(fmt.Sprint(h), "resources:[pods]") {
				t.Errorf("with a policy rule mode: enforce, %v does not validate pods", h.(map[string]any)["name"])
			}
		}
	}
}
