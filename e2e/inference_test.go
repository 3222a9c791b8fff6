package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		{"testdata/inference/vllm-dp8-deployment.yaml", "app=vllm-dp8",
			[]string{"--server", "vllm", "--data-parallel-size", "8", "--gpus", "8", "--memory-limit", "64Gi"}, "vllm"},
		{"testdata/inference/vllm-ray-deployment.yaml", "app=vllm-ray",
			[]string{"--server", "vllm", "-tp", "8", "--distributed-executor-backend", "ray", "--gpus", "8",
				"--memory-limit", "128Gi"}, "vllm"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			planned := serverPlan(t, c.plan...)
			if planned.Terms.ServerBytes == 0 {
				t.Fatalf("shmguard plan %s counted no segments of the server", strings.Join(c.plan, " "))
			}
			ns := newNamespace(t, nil)
			stored, _ := createFile(t, ns, c.file)
			expectServerSized(t, ns, stored, c.selector, c.server, planned.Required)
		})
	}
}

// shmguard never makes an effective /dev/shm smaller: a vLLM Deployment whose memory emptyDir
// has no sizeLimit (the kubelet sizes it at the memory limit) is stored as it was written, and
// so are its pods.
func TestAnUnboundedMemoryShmIsLeftAsWritten(t *testing.T) {
	ns := newNamespace(t, nil)
	stored, _ := createFile(t, ns, "testdata/inference/vllm-unbounded-deployment.yaml")
	written := readObjects(t, "testdata/inference/vllm-unbounded-deployment.yaml")[0]
	for _, path := range [][]string{{"spec", "template", "spec", "volumes"}, {"spec", "template", "metadata", "annotations"}} {
		want, _, _ := unstructured.NestedFieldNoCopy(written.Object, path...)
		got, _, _ := unstructured.NestedFieldNoCopy(stored.Object, path...)
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%s: stored %v, written %v", strings.Join(path, "."), got, want)
		}
	}
	eachPodMade(t, ns, "app=vllm-unbounded", func(p *corev1.Pod) {
		for _, v := range p.Spec.Volumes {
			if v.Name == "dshm" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit != nil) {
				t.Errorf("pod %s: volume dshm %+v, want the emptyDir as written, without sizeLimit", p.Name, v.EmptyDir)
			}
		}
		if _, ok := p.Annotations["shmguard.io/plan"]; ok {
			t.Errorf("pod %s was annotated with a plan: want it left as written", p.Name)
		}
	})
}

// plannedServer is what `shmguard plan -o json` says of a server's launch.
type plannedServer struct {
	Required      string `json:"required"`
	RequiredBytes int64  `json:"required_bytes"`
	Terms         struct {
		ServerBytes int64 `json:"server_bytes"`
	} `json:"terms"`
}

// serverPlan runs `shmguard plan -o json` with a server's flags.
func serverPlan(t *testing.T, flags ...string) plannedServer {
	t.Helper()
	out, _ := runShmguard(t, nil, append([]string{"plan", "-o", "json"}, flags...)...)
	var planned plannedServer
	if err := json.Unmarshal([]byte(out), &planned); err != nil {
		t.Fatalf("shmguard plan -o json: %v\n%s", err, out)
	}
	return planned
}

// expectServerSized checks that a controller stored in ns carries the plan of `server` at
// `required` on its template, and that the pods labelled `selector` it makes carry that /dev/shm
// and no privilege.
func expectServerSized(t *testing.T, ns string, stored *unstructured.Unstructured, selector, server, required string) {
	t.Helper()
	plan, _, _ := nestedString(stored.Object, "spec", "template", "metadata", "annotations", "shmguard.io/plan")
	if !strings.Contains(plan, `"server":"`+server+`"`) || !strings.Contains(plan, `"required":"`+required+`"`) {
		t.Fatalf("the stored template's shmguard.io/plan is %q: want server %s and required %s", plan, server, required)
	}
	eachPodMade(t, ns, selector, func(p *corev1.Pod) {
		shm := readShm(&p.Spec)
		if shm.size == nil || shm.size.String() != required {
			t.Errorf("pod %s: /dev/shm %v, want %s", p.Name, shm.size, required)
		}
		if shm.ipcLock || shm.hostIPC {
			t.Errorf("pod %s was given a privilege", p.Name)
		}
	})
}
