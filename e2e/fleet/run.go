package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"shmguard.io/e2e/controlplane"
)

// Point is the storm's pods at one moment, seconds after it started.
type Point struct {
	T       float64 `json:"t"`
	Exist   int     `json:"exist"`
	Running int     `json:"running"`
}

// ReplicaUse is one of shmguard's webhook replicas over a storm (in a peer's mode, the peer's
// one process: fleet/peers.go).
type ReplicaUse struct {
	Pod        string  `json:"pod"`
	CPUSeconds float64 `json:"cpuSeconds"` // CPU time over the storm (since the pod started, for one started during it)
	PeakMiB    float64 `json:"peakMiB"`    // its cgroup's peak memory
	RSSMiB     float64 `json:"rssMiB"`     // anonymous memory at the end
}

// Result is one storm in one mode, with or without a fault.
type Result struct {
	Storm string `json:"storm"`
	Mode  Mode   `json:"mode"`
	Fault string `json:"fault"`
	Round int    `json:"round"`
	Pods  int    `json:"pods"`
	// Seconds from the storm's start until every pod existed and until every pod was Running;
	// NaN when it did not happen within the time allowed.
	ExistSeconds   float64 `json:"existSeconds"`
	RunningSeconds float64 `json:"runningSeconds"`
	// Pod creates, as kube-apiserver's apiserver_request_duration_seconds saw them (POST pods).
	CreateP50 float64 `json:"createP50"`
	CreateP99 float64 `json:"createP99"`
	// The mode's mutating webhooks (shmguard's, or a peer's) as
	// apiserver_admission_webhook_admission_duration_seconds saw them, and all mutating admission
	// of pods (apiserver_admission_step_admission_duration_seconds, type admit:
	// MutatingAdmissionPolicies and webhooks together).
	WebhookCalls float64 `json:"webhookCalls"`
	WebhookP50   float64 `json:"webhookP50"`
	WebhookP99   float64 `json:"webhookP99"`
	AdmitP99     float64 `json:"admitP99"`
	// apiserver_admission_webhook_rejection_count and _fail_open_count of the mode's webhooks: calls
	// that failed, and those the API server then admitted as written (failurePolicy Ignore).
	Rejections float64 `json:"rejections"`
	FailOpen   float64 `json:"failOpen"`
	// Pod creates the API server answered with an error (apiserver_request_total, POST pods).
	FailedCreates float64      `json:"failedCreates"`
	Replicas      []ReplicaUse `json:"replicas"`
	// The /dev/shm every pod must have (the mode's answer for the storm's pod; for none, the
	// webhook's), and the pods that came out without it.
	Want       string  `json:"want"`
	WithoutShm int     `json:"withoutShm"`
	Timeline   []Point `json:"timeline"`
	FaultNote  string  `json:"faultNote,omitempty"`
	// The fault's window, in seconds from the storm's start (from its injection to the end of
	// its Inject: a replica killed and replaced, a rollout done), and the storm's pods created
	// inside it (by creationTimestamp, whole seconds): a fault no create overlapped proved
	// nothing.
	FaultFrom        float64 `json:"faultFrom,omitempty"`
	FaultTo          float64 `json:"faultTo,omitempty"`
	CreatesInFault   int     `json:"createsInFault"`
	FirstCreateFault float64 `json:"firstCreateInFault,omitempty"`
	LastCreateFault  float64 `json:"lastCreateInFault,omitempty"`
}

// Fault is what goes wrong in the middle of a storm: Inject runs once a quarter of its pods exist.
// Before, when set, runs before the storm starts, for a fault that must be in place by then (a
// flood); what it returns undoes it once the storm is measured.
type Fault struct {
	Name   string
	Before func(ctx context.Context, e *Env) (func(), error)
	Inject func(ctx context.Context, e *Env) (string, error)
}

// Run starts storm s in namespace ns, injects fault f (nil: none) once a quarter of its pods
// exist, and measures until every pod runs or `timeout` passes.
func (e *Env) Run(ctx context.Context, s *Storm, m Mode, ns, want string, f *Fault, timeout time.Duration) (*Result, error) {
	r := &Result{Storm: s.Name, Mode: m, Pods: s.Pods, Want: want, ExistSeconds: math.NaN(), RunningSeconds: math.NaN()}
	if f != nil {
		r.Fault = f.Name
	}
	pods := e.CS.CoreV1().Pods(ns)
	old := map[types.UID]bool{}
	if s.Restart {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: s.Selector})
		if err != nil {
			return nil, err
		}
		for _, p := range list.Items {
			old[p.UID] = true
		}
	}
	before, err := ScrapeAPIServer(ctx, e.CS)
	if err != nil {
		return nil, err
	}
	replicasBefore := e.replicaUse(ctx)
	_, peerBefore := e.peerUse(m)
	if f != nil && f.Before != nil {
		undo, err := f.Before(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("fault %s: %w", f.Name, err)
		}
		defer undo()
	}
	start := time.Now()
	if err := s.Start(ctx, e, ns); err != nil {
		return nil, fmt.Errorf("starting storm %s: %w", s.Name, err)
	}
	faultDone := make(chan error, 1)
	injected := f == nil
	var faultFrom, faultTo time.Time
	var list *corev1.PodList
	for {
		list, err = pods.List(ctx, metav1.ListOptions{LabelSelector: s.Selector})
		if err != nil {
			e.Log("listing the storm's pods: %v", err) // an API server restart, a fault: go on
			time.Sleep(time.Second)
			continue
		}
		exist, running := 0, 0
		for _, p := range list.Items {
			if old[p.UID] || p.DeletionTimestamp != nil {
				continue
			}
			exist++
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		t := time.Since(start).Seconds()
		r.Timeline = append(r.Timeline, Point{T: t, Exist: exist, Running: running})
		if exist >= s.Pods && math.IsNaN(r.ExistSeconds) {
			r.ExistSeconds = t
		}
		if !injected && exist >= s.Pods/4 {
			injected = true
			faultFrom = time.Now()
			go func() {
				note, err := f.Inject(ctx, e)
				r.FaultNote = note
				faultTo = time.Now()
				faultDone <- err
			}()
		}
		if running >= s.Pods && injected {
			r.RunningSeconds = t
			break
		}
		if time.Since(start) > timeout {
			break
		}
		time.Sleep(time.Second)
	}
	if f != nil && injected {
		if err := <-faultDone; err != nil {
			return r, fmt.Errorf("fault %s: %w", f.Name, err)
		}
		r.FaultFrom, r.FaultTo = faultFrom.Sub(start).Seconds(), faultTo.Sub(start).Seconds()
		// creationTimestamp has whole seconds: the window is widened to them.
		from, to := faultFrom.Truncate(time.Second), faultTo.Truncate(time.Second).Add(time.Second)
		for _, p := range list.Items {
			c := p.CreationTimestamp.Time
			if old[p.UID] || c.Before(from) || !c.Before(to) {
				continue
			}
			at := c.Sub(start).Seconds()
			if r.CreatesInFault == 0 || at < r.FirstCreateFault {
				r.FirstCreateFault = at
			}
			if at > r.LastCreateFault {
				r.LastCreateFault = at
			}
			r.CreatesInFault++
		}
	}
	after, err := ScrapeAPIServer(ctx, e.CS)
	if err != nil {
		return nil, err
	}
	e.measure(r, before, after)
	r.Replicas = e.replicasSince(ctx, replicasBefore)
	if m.IsPeer() {
		r.Replicas = e.peerSince(m, peerBefore)
	}
	for _, p := range list.Items {
		if !old[p.UID] && p.DeletionTimestamp == nil && ShmOf(&p.Spec) != want {
			r.WithoutShm++
		}
	}
	return r, nil
}

func (e *Env) measure(r *Result, before, after Scrape) {
	create := map[string]string{"verb": "POST", "resource": "pods", "subresource": "", "dry_run": ""}
	h := after.Histogram("apiserver_request_duration_seconds", create).Since(before.Histogram("apiserver_request_duration_seconds", create))
	r.CreateP50, r.CreateP99 = h.Quantile(0.5), h.Quantile(0.99)
	mutate := map[string]string{"name": r.Mode.webhooks(), "type": "admit", "operation": "CREATE"}
	w := after.Histogram("apiserver_admission_webhook_admission_duration_seconds", mutate).
		Since(before.Histogram("apiserver_admission_webhook_admission_duration_seconds", mutate))
	r.WebhookCalls, r.WebhookP50, r.WebhookP99 = w.Count(), w.Quantile(0.5), w.Quantile(0.99)
	step := map[string]string{"type": "admit", "operation": "CREATE"}
	r.AdmitP99 = after.Histogram("apiserver_admission_step_admission_duration_seconds", step).
		Since(before.Histogram("apiserver_admission_step_admission_duration_seconds", step)).Quantile(0.99)
	ours := map[string]string{"name": r.Mode.webhooks()}
	r.Rejections = CounterSince(after.Counter("apiserver_admission_webhook_rejection_count", ours),
		before.Counter("apiserver_admission_webhook_rejection_count", ours))
	r.FailOpen = CounterSince(after.Counter("apiserver_admission_webhook_fail_open_count", ours),
		before.Counter("apiserver_admission_webhook_fail_open_count", ours))
	failed := map[string]string{"verb": "POST", "resource": "pods", "subresource": "", "code": "!201", "dry_run": ""}
	r.FailedCreates = CounterSince(after.Counter("apiserver_request_total", failed), before.Counter("apiserver_request_total", failed))
}

// replicaUse is each webhook replica's cgroup usage now, by pod UID.
func (e *Env) replicaUse(ctx context.Context) map[types.UID]controlplane.PodUsage {
	out := map[types.UID]controlplane.PodUsage{}
	list, err := e.CS.CoreV1().Pods(controlplane.ReleaseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=shmguard"})
	if err != nil {
		return out
	}
	for i := range list.Items {
		if u, err := controlplane.PodCgroupUsage(&list.Items[i]); err == nil {
			out[list.Items[i].UID] = u
		}
	}
	return out
}

func (e *Env) replicasSince(ctx context.Context, before map[types.UID]controlplane.PodUsage) []ReplicaUse {
	list, err := e.CS.CoreV1().Pods(controlplane.ReleaseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=shmguard"})
	if err != nil {
		return nil
	}
	var out []ReplicaUse
	for i := range list.Items {
		p := &list.Items[i]
		u, err := controlplane.PodCgroupUsage(p)
		if err != nil {
			continue
		}
		cpu := u.CPUNanos - before[p.UID].CPUNanos
		out = append(out, ReplicaUse{Pod: p.Name, CPUSeconds: float64(cpu) / 1e9,
			PeakMiB: float64(u.Peak) / (1 << 20), RSSMiB: float64(u.RSS) / (1 << 20)})
	}
	return out
}

// The faults.

// RollingUpdate is `helm upgrade` to a changed config: the Deployment rolls its replicas.
func RollingUpdate(round int) *Fault {
	return &Fault{Name: "rolling update", Inject: func(ctx context.Context, e *Env) (string, error) {
		values, err := e.CP.HelmValueArgs()
		if err != nil {
			return "", err
		}
		args := append([]string{"upgrade", controlplane.ReleaseName, e.CP.Chart, "--namespace", controlplane.ReleaseNamespace,
			"--reuse-values", "--set", fmt.Sprintf("server.keepAliveSeconds=%d", 120+round%2+1),
			// a new annotation each time: every upgrade rolls the replicas, whatever the last left
			"--set-string", "podAnnotations.fleetRollout=" + strconv.Itoa(round) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}, values...)
		start := time.Now()
		if out, err := e.CP.Run(nil, "helm", args...); err != nil {
			return "", fmt.Errorf("helm upgrade: %v\n%s", err, out)
		}
		if err := WaitRollout(ctx, e.CS); err != nil {
			return "", err
		}
		return fmt.Sprintf("helm upgrade and the rollout, its old replicas drained and gone, took %.1fs", time.Since(start).Seconds()), nil
	}}
}

// KillReplica kills one webhook replica's process with SIGKILL: the kubelet restarts its
// container.
func KillReplica() *Fault {
	return &Fault{Name: "kill -9 of a replica", Inject: func(ctx context.Context, e *Env) (string, error) {
		pid, err := servePid()
		if err != nil {
			return "", err
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return "", err
		}
		return fmt.Sprintf("killed pid %d", pid), nil
	}}
}

// servePid is the pid of one `shmguard-webhook` process on this machine: a webhook replica.
func servePid() (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "shmguard-webhook" &&
			strings.Contains(string(cmdline), "/etc/shmguard/tls/tls.crt") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no shmguard-webhook process of a replica found")
}

// Outage stops every webhook replica for `d` (the Deployment scaled to 0), then brings them back.
func Outage(d time.Duration) *Fault {
	return &Fault{Name: fmt.Sprintf("all replicas down %ds", int(d.Seconds())), Inject: func(ctx context.Context, e *Env) (string, error) {
		scale, err := e.CS.AppsV1().Deployments(controlplane.ReleaseNamespace).GetScale(ctx, controlplane.ReleaseName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		replicas := scale.Spec.Replicas
		if err := Scale(ctx, e.CS, controlplane.ReleaseNamespace, controlplane.ReleaseName, 0); err != nil {
			return "", err
		}
		time.Sleep(d)
		if err := Scale(ctx, e.CS, controlplane.ReleaseNamespace, controlplane.ReleaseName, replicas); err != nil {
			return "", err
		}
		return "", WaitReplicas(ctx, e.CS, replicas)
	}}
}

// RestartAPIServer stops kube-apiserver and starts it again.
func RestartAPIServer() *Fault {
	return &Fault{Name: "kube-apiserver restarted", Inject: func(ctx context.Context, e *Env) (string, error) {
		start := time.Now()
		if err := e.CP.RestartAPIServer(); err != nil {
			return "", err
		}
		return fmt.Sprintf("down and back in %.1fs (the metrics count from the restart)", time.Since(start).Seconds()), nil
	}}
}

// ScaleReplicas makes shmguard's Deployment n replicas through helm (so that a later
// `helm upgrade --reuse-values` keeps them) and returns what puts the release back as the
// control plane installed it.
func ScaleReplicas(ctx context.Context, e *Env, n int32) (func(), error) {
	values, err := e.CP.HelmValueArgs()
	if err != nil {
		return nil, err
	}
	upgrade := func(extra ...string) error {
		args := append(append([]string{"upgrade", controlplane.ReleaseName, e.CP.Chart, "--namespace",
			controlplane.ReleaseNamespace}, extra...), values...)
		if out, err := e.CP.Run(nil, "helm", args...); err != nil {
			return fmt.Errorf("helm upgrade: %v\n%s", err, out)
		}
		return nil
	}
	if err := upgrade("--reuse-values", "--set", fmt.Sprintf("replicaCount=%d", n)); err != nil {
		return nil, err
	}
	return func() {
		err := upgrade()
		if err == nil {
			err = WaitRollout(context.Background(), e.CS)
		}
		if err != nil {
			e.Log("putting shmguard's release back: %v", err)
		}
	}, WaitReplicas(ctx, e.CS, n)
}

// WaitRollout waits until shmguard's Deployment has rolled out its last change: every replica
// updated and ready, and the replicas it replaced drained and gone (WaitReplicas). Not `helm upgrade --wait`, which also waits for the node agents' DaemonSet,
// whose pods on KWOK's nodes stay not ready once an API server restart has made those nodes
// unreachable for a while.
func WaitRollout(ctx context.Context, cs kubernetes.Interface) error {
	d, err := cs.AppsV1().Deployments(controlplane.ReleaseNamespace).Get(ctx, controlplane.ReleaseName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return WaitReplicas(ctx, cs, *d.Spec.Replicas)
}

// WaitReplicas waits until shmguard's Deployment has n ready, updated replicas, its last change
// observed, and no other: none of its pods still terminating either (a replica in its drain
// still answers the API server on the connections it holds), so that what comes next meets the
// webhook at rest.
func WaitReplicas(ctx context.Context, cs kubernetes.Interface, n int32) error {
	deps := cs.AppsV1().Deployments(controlplane.ReleaseNamespace)
	pods := cs.CoreV1().Pods(controlplane.ReleaseNamespace)
	notYet := func() error {
		d, err := deps.Get(ctx, controlplane.ReleaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.ReadyReplicas != n ||
			d.Status.UpdatedReplicas != n || d.Status.Replicas != n {
			return fmt.Errorf("%d replicas, %d updated, %d ready; want %d", d.Status.Replicas,
				d.Status.UpdatedReplicas, d.Status.ReadyReplicas, n)
		}
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: controlplane.WebhookSelector})
		if err != nil {
			return err
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("%s still draining", p.Name)
			}
		}
		return nil
	}
	for {
		err := notYet()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("shmguard's replicas not back (%v): %w", err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// MarshalJSON writes the result with NaN (what did not happen, or was not measured: a webhook's
// latency with no webhook) as null, which encoding/json refuses to write as a number.
func (r Result) MarshalJSON() ([]byte, error) {
	v := reflect.ValueOf(r)
	out := make(map[string]any, v.NumField())
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		f := v.Field(i)
		if f.Kind() == reflect.Float64 && math.IsNaN(f.Float()) {
			out[name] = nil
			continue
		}
		if name == "faultNote" && f.String() == "" {
			continue
		}
		out[name] = f.Interface()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes: null is NaN again.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	p := plain{}
	v := reflect.ValueOf(&p).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() == reflect.Float64 {
			v.Field(i).SetFloat(math.NaN())
		}
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Result(p)
	return nil
}
