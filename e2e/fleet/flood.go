package fleet

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

//go:embed flood.py
var floodScript string

// FloodNamespace is the tenant's namespace a flood runs in: neither the storm's nor shmguard's.
const FloodNamespace = "tenant-flood"

// FloodStats is one line of flood.py's output: what the flood holds and did so far.
type FloodStats struct {
	T                 float64 `json:"t"`
	TLS               int     `json:"tls"`
	Raw               int     `json:"raw"`
	TLSOpened         int     `json:"tlsOpened"`
	TLSClosedByServer int     `json:"tlsClosedByServer"`
	TLSFailed         int     `json:"tlsFailed"`
	RawOpened         int     `json:"rawOpened"`
	RawClosedByServer int     `json:"rawClosedByServer"`
}

// Flood is a tenant's flood of the webhook's Service, from a pod of `image` on the real node in
// a namespace of its own (flood.py): up to `tls` idle TLS connections held, each one the
// replicas close opened again, and raw TCP connections that never start TLS, in 2 s bursts
// every 5 s. It is in place before the storm starts: Before returns once the replicas have
// closed some of its TLS connections, so it holds all they let one peer hold. Inject lets it go
// on for `d` while the storm's pods are created, then stops it; its note is the flood's last
// line. The pods must come out as without it: every review answered, none failed open.
func Flood(image string, tls int, d time.Duration) *Fault {
	return &Fault{
		Name: fmt.Sprintf("a tenant's flood of %d idle TLS connections and raw connects", tls),
		Before: func(ctx context.Context, e *Env) (func(), error) {
			undo := func() {
				_ = e.CS.CoreV1().Namespaces().Delete(context.Background(), FloodNamespace, metav1.DeleteOptions{})
			}
			stats, err := e.startFlood(ctx, image, tls)
			if err != nil {
				undo()
				return nil, err
			}
			e.Log("the flood holds %d TLS connections after %.0fs (%d opened, %d closed by the replicas)",
				stats.TLS, stats.T, stats.TLSOpened, stats.TLSClosedByServer)
			return undo, nil
		},
		Inject: func(ctx context.Context, e *Env) (string, error) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			last, err := e.floodStats(ctx)
			if err != nil {
				return "", err
			}
			if err := e.CS.CoreV1().Pods(FloodNamespace).Delete(ctx, "flood", *metav1.NewDeleteOptions(0)); err != nil {
				return "", err
			}
			note, _ := json.Marshal(last)
			return "the flood at its end: " + string(note), nil
		},
	}
}

// startFlood creates the flood's namespace and pod and waits until the replicas have closed
// some of its TLS connections.
func (e *Env) startFlood(ctx context.Context, image string, tls int) (*FloodStats, error) {
	svc, err := e.CS.CoreV1().Services(controlplane.ReleaseNamespace).Get(ctx, controlplane.ReleaseName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FloodNamespace}}
	if _, err := e.CS.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "flood"},
		Spec: corev1.PodSpec{
			NodeName:      controlplane.NodeName,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "flood", Image: image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"python3", "-c", floodScript, svc.Spec.ClusterIP, "443", strconv.Itoa(tls), "900"},
			}},
		},
	}
	if _, err := e.CS.CoreV1().Pods(FloodNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var last *FloodStats
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if last, err = e.floodStats(ctx); err == nil && last.TLSClosedByServer > 0 {
			return last, nil
		}
	}
	return nil, fmt.Errorf("the flood's pod did not reach what the replicas let one peer hold in 3m (last: %+v, %v)", last, err)
}

// floodStats is the flood pod's last line of output.
func (e *Env) floodStats(ctx context.Context) (*FloodStats, error) {
	out, err := e.CS.CoreV1().Pods(FloodNamespace).GetLogs("flood", &corev1.PodLogOptions{TailLines: ptr.To(int64(1))}).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var s FloodStats
	if err := json.Unmarshal(bytes.TrimSpace(out), &s); err != nil {
		return nil, fmt.Errorf("the flood's output %q: %w", out, err)
	}
	return &s, nil
}

// FailOpenLines returns kube-apiserver's log lines saying it admitted a pod without shmguard's
// answer ("Failed calling webhook, failing open shmguard..."), oldest first: they say why.
func FailOpenLines(cp *controlplane.State) ([]string, error) {
	b, err := os.ReadFile(cp.Path("kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "failing open") && strings.Contains(line, "shmguard") {
			lines = append(lines, line)
		}
	}
	return lines, nil
}
