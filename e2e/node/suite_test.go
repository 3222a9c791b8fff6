// Package node checks what shmguard's patch does to pods that run: on the node of
// `scripts/control-plane.sh up --node` (kubelet, containerd, runc, a GPU device plugin), with
// shmguard installed by helm from its own image and called by the API server through its
// Service, and PyTorch's DataLoader in the training image. Without a node the package is skipped,
// saying so.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
	"shmguard.io/e2e/fleet"
)

var (
	cp         *controlplane.State
	client     *kubernetes.Clientset
	trainImage string
)

func TestMain(m *testing.M) {
	dir := os.Getenv("SHMGUARD_CONTROL_PLANE_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "shmguard-control-plane")
	}
	// scripts/test.sh asks for the node (SHMGUARD_NODE_SUITE=required): then a node that is not
	// there, or one of whose processes has died, fails the suite; run by hand without a node, it
	// is skipped, and says so.
	required := os.Getenv("SHMGUARD_NODE_SUITE") == "required"
	s, err := controlplane.Load(dir)
	why := ""
	if err != nil || s.Node == nil {
		why = "no control plane with a node in " + dir + " (scripts/control-plane.sh up --node)"
	} else if dead := controlplane.Dead(dir); len(dead) > 0 {
		why = "the node's processes have died: " + strings.Join(dead, ", ") + " (their logs are in " + dir + ")"
	}
	if why != "" && required {
		fmt.Fprintf(os.Stderr, "node: FAIL the node suite: %s\n", why)
		os.Exit(1)
	}
	if why != "" {
		fmt.Printf("SKIPPED the node suite: %s\n", why)
		os.Exit(0)
	}
	cp = s
	if client, err = cp.Clientset(); err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		os.Exit(1)
	}
	trainImage = cp.Node.Images["SHMGUARD_TRAIN_IMAGE"]
	os.Exit(m.Run())
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newNamespace creates a namespace with labels, deleted when the test ends, and waits for its
// default service account.
func newNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	return newNamespaceNamed(t, "node-", labels)
}

// newNamespaceNamed is newNamespace with the name starting with prefix (a policy rule's glob).
func newNamespaceNamed(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, ns.Name) })
	wait(t, 30*time.Second, "the default service account", func() error {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return ns.Name
}

// deleteNamespace deletes a test's namespace and then its pods, and waits until those are gone.
// Pods still ending hold the node's GPUs: a next test's pod that the scheduler places on GPUs the
// kubelet has not yet released fails its admission (UnexpectedAdmissionError) with no output.
// The namespace goes first: once it is terminating, no controller of it can create a pod again.
// A graceful delete (1 s, not 0) keeps each pod in the API until the kubelet has stopped it.
func deleteNamespace(t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Logf("deleting namespace %s: %v", ns, err)
	}
	pods := client.CoreV1().Pods(ns)
	grace := int64(1)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{}); err != nil {
		t.Logf("deleting the pods of %s: %v", ns, err)
	}
	wait(t, 2*time.Minute, "the pods of "+ns+" gone", func() error {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(list.Items); n > 0 {
			return fmt.Errorf("%d left", n)
		}
		return nil
	})
}

// off is the label that keeps shmguard away from a namespace (the chart's enabledLabel).
var off = map[string]string{"shmguard.io/enabled": "false"}

// wait polls f every 200 ms until it returns nil or d passes.
func wait(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, d, err)
}

// webhookWhole waits until shmguard's webhook Deployment is whole again after a test disrupted
// it (fleet.WaitRollout: every replica updated and Ready, none still draining), so that the next
// test's pods meet the webhook at rest.
func webhookWhole(t *testing.T, ctx context.Context) {
	t.Helper()
	whole, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := fleet.WaitRollout(whole, client); err != nil {
		t.Errorf("shmguard's webhook not whole again within 3m: %v", err)
	}
}

// trainPod is a one-shot pod of the training image asking for gpus GPUs and memory, running the
// DataLoader with args (or command, when given).
func trainPod(name string, gpus int64, memory string, args ...string) *corev1.Pod {
	limits := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
	if gpus > 0 {
		limits[controlplane.GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "train", Image: trainImage, ImagePullPolicy: corev1.PullNever, Args: args,
				Resources:                corev1.ResourceRequirements{Limits: limits},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// shell makes the pod run a shell script instead of the DataLoader.
func shell(p *corev1.Pod, script string) *corev1.Pod {
	p.Spec.Containers[0].Command = []string{"sh", "-c", script}
	p.Spec.Containers[0].Args = nil
	return p
}

func annotate(p *corev1.Pod, kv ...string) *corev1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

// ran is a pod that ran to its end: the pod as stored when it ended, and its container's output.
type ran struct {
	pod  *corev1.Pod
	logs string
}

// run creates the pod in ns and waits until it has succeeded or failed.
func run(t *testing.T, ns string, p *corev1.Pod, timeout time.Duration) ran {
	t.Helper()
	ctx := ctxFor(t, timeout+time.Minute)
	created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	var r ran
	wait(t, timeout, "pod "+p.Name+" ends", func() error {
		got, err := client.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch got.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
			r.pod = got
			return nil
		}
		return fmt.Errorf("phase %s", got.Status.Phase)
	})
	// The first container's output (a pod of several needs a container named).
	b, err := client.CoreV1().Pods(ns).GetLogs(created.Name, &corev1.PodLogOptions{Container: p.Spec.Containers[0].Name}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", p.Name, err)
	}
	r.logs = string(b)
	return r
}

// succeeded fails the test unless the pod succeeded.
func (r ran) succeeded(t *testing.T) ran {
	t.Helper()
	if r.pod.Status.Phase != corev1.PodSucceeded {
		r.fatalf(t, "want Succeeded")
	}
	return r
}

// result is the DataLoader's last line.
type result struct {
	Peak int64 `json:"peak_shm_bytes"`
	Size int64 `json:"shm_size_bytes"`
}

func (r ran) result(t *testing.T) result {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.logs), "\n")
	var res result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.Size == 0 {
		r.fatalf(t, "the last line is not the DataLoader's result (%v)", err)
	}
	return res
}

// shmVolume is the size of the memory emptyDir the pod mounts at /dev/shm (0: none).
func shmVolume(p *corev1.Pod) int64 {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil {
			continue
		}
		for _, m := range p.Spec.Containers[0].VolumeMounts {
			if m.Name == v.Name && m.MountPath == "/dev/shm" {
				return v.EmptyDir.SizeLimit.Value()
			}
		}
	}
	return 0
}

// outcome says how a pod ended: its phase, reason and message, the /dev/shm it was given (none:
// the container runtime's 64 MiB) and each container's end.
func (r ran) outcome() string {
	s := r.pod.Status
	out := fmt.Sprintf("%s %s %s", s.Phase, s.Reason, s.Message)
	if size := shmVolume(r.pod); size > 0 {
		out += "; /dev/shm " + mib(size)
	} else {
		out += "; no /dev/shm volume (unpatched)"
	}
	for _, c := range s.ContainerStatuses {
		if e := c.State.Terminated; e != nil {
			// The message is the output's tail when the container failed
			// (FallbackToLogsOnError): its last line says enough here.
			out += fmt.Sprintf("; %s exited %d (%s) %s", c.Name, e.ExitCode, e.Reason, tail(e.Message, 1))
		}
	}
	return out
}

// fatalf ends the test on what went wrong with the pod: its output's last lines first, then the
// verdict and how the pod ended, so that a log cut to its last lines still says both.
func (r ran) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("pod %s's output, its last 20 lines:\n%s\npod %s: %s; it ended: %s",
		r.pod.Name, tail(r.logs, 20), r.pod.Name, fmt.Sprintf(format, args...), r.outcome())
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// audit runs `shmguard audit -o json` over the pod as a manifest and returns the IDs of its
// findings.
func audit(t *testing.T, p *corev1.Pod) []string {
	t.Helper()
	p = p.DeepCopy()
	p.APIVersion, p.Kind = "v1", "Pod"
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cp.Shmguard, "audit", "-o", "json", "-")
	cmd.Stdin = bytes.NewReader(b)
	out, _ := cmd.Output() // exit 1 with findings
	var res struct {
		Records []struct {
			Findings []struct {
				ID string `json:"id"`
			} `json:"findings"`
		} `json:"records"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Records) != 1 {
		t.Fatalf("shmguard audit: %v\n%s", err, out)
	}
	var ids []string
	for _, f := range res.Records[0].Findings {
		ids = append(ids, f.ID)
	}
	return ids
}

func has(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
