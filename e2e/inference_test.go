package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An inference server's Deployment, created through the API server without DataLoader
// annotations, is patched to the size its launch arguments need — the same size `shmguard plan
// --server` computes from the same flags — and the pods the controller makes from it carry it.
func TestInferenceServersAreSizedFromTheirLaunch(t *testing.T) {
	cases := []struct {
		file, selector string
		plan           []string // shmguard plan's flags for the same launch
		server         string
	}{
		{"testdata/inference/vllm-deployment.yaml", "app=vllm-qwen-vl",
			[]string{"--server", "vllm", "--tp", "4", "--gpus", "4", "--mm-processor-cache-shm", "--memory-limit", "256Gi"}, "vllm"},
		{"testdata/inference/sglang-deployment.yaml", "app=sglang-llama",
			[]string{"--server", "sglang", "--tp", "2", "--gpus", "2", "--memory-limit", "128Gi"}, "sglang"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out, _ := runShmguard(t, nil, append([]string{"plan", "-o", "json"}, c.plan...)...)
			var planned struct {
				Required string `json:"required"`
				Terms    struct {
					ServerBytes int64 `json:"server_bytes"`
				} `json:"terms"`
			}
			if err := json.Unmarshal([]byte(out), &planned); err != nil {
				t.Fatalf("shmguard plan -o json: %v\n%s", err, out)
			}
			if planned.Terms.ServerBytes == 0 {
				t.Fatalf("shmguard plan %s counted no segments of the server", strings.Join(c.plan, " "))
			}
			ns := newNamespace(t, nil)
			stored, _ := createFile(t, ns, c.file)
			plan, _, _ := nestedString(stored.Object, "spec", "template", "metadata", "annotations", "shmguard.io/plan")
			if !strings.Contains(plan, `"server":"`+c.server+`"`) || !strings.Contains(plan, `"required":"`+planned.Required+`"`) {
				t.Fatalf("the stored template's shmguard.io/plan is %q: want server %s and required %s", plan, c.server, planned.Required)
			}
			ctx := ctxFor(t)
			eventually(t, 60*time.Second, "pods of "+c.file, func() error {
				pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: c.selector})
				if err != nil {
					return err
				}
				if len(pods.Items) == 0 {
					return fmt.Errorf("no pods yet")
				}
				for i := range pods.Items {
					p := &pods.Items[i]
					shm := readShm(&p.Spec)
					if shm.size == nil || shm.size.String() != planned.Required {
						t.Errorf("pod %s: /dev/shm %v, want %s", p.Name, shm.size, planned.Required)
					}
					if shm.ipcLock || shm.hostIPC {
						t.Errorf("pod %s was given a privilege", p.Name)
					}
				}
				return nil
			})
		})
	}
}
