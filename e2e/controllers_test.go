package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With kube-controller-manager running, the pods a Job and a Deployment create carry the plan
// shmguard put in their template when they were created; the Pod webhook is called for each
// and finds nothing left to do.
func TestControllersCreatePatchedPods(t *testing.T) {
	cases := []struct {
		file, selector string
	}{
		{"testdata/kinds/job.yaml", "batch.kubernetes.io/job-name=finetune"},
		{"testdata/kinds/deployment.yaml", "app=embedder"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ns := newNamespace(t, nil)
			allowedBefore := metric(t, "shmguard_admission_requests_total",
				map[string]string{"endpoint": "mutate", "kind": "Pod", "decision": "allowed"})
			stored, _ := createFile(t, ns, c.file)
			plan, _, _ := nestedString(stored.Object, "spec", "template", "metadata", "annotations", "shmguard.io/plan")
			if plan == "" {
				t.Fatalf("the stored %s template has no shmguard.io/plan", stored.GetKind())
			}
			eachPodMade(t, ns, c.selector, func(p *corev1.Pod) {
				if readShm(&p.Spec).size == nil {
					t.Errorf("pod %s has no dshm volume", p.Name)
				}
				if got := p.Annotations["shmguard.io/plan"]; got != plan {
					t.Errorf("pod %s: shmguard.io/plan %q, its template's %q", p.Name, got, plan)
				}
			})
			// The Pod webhook saw each pod and answered without a patch.
			eventually(t, 10*time.Second, "shmguard's decisions about the pods", func() error {
				var allowed, patched int
				for _, d := range decisions(t, ns) {
					if d.Kind != "Pod" || d.Endpoint != "mutate" {
						continue
					}
					switch d.Decision {
					case "allowed":
						allowed++
					case "patched":
						patched++
					}
				}
				if patched > 0 {
					t.Fatalf("the Pod webhook patched %d pods created from a patched template", patched)
				}
				if allowed == 0 {
					return fmt.Errorf("no /mutate decision about a pod of %s logged yet", ns)
				}
				return nil
			})
			after := metric(t, "shmguard_admission_requests_total",
				map[string]string{"endpoint": "mutate", "kind": "Pod", "decision": "allowed"})
			if after <= allowedBefore {
				t.Errorf("shmguard_admission_requests_total{endpoint=mutate,kind=Pod,decision=allowed} did not move (%v)", after)
			}
		})
	}
}

func nestedString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur, ok = m[f]
		if !ok {
			return "", false, nil
		}
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// eachPodMade waits until the pods labelled selector in ns exist (a controller made them) and
// checks each once.
func eachPodMade(t *testing.T, ns, selector string, check func(p *corev1.Pod)) {
	t.Helper()
	ctx := ctxFor(t)
	eventually(t, 60*time.Second, "pods "+selector, func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("no pods yet")
		}
		for i := range pods.Items {
			check(&pods.Items[i])
		}
		return nil
	})
}
