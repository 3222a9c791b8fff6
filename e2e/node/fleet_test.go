package node

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"shmguard.io/e2e/fleet"
)

// A storm over a simulated fleet: 200 KWOK nodes of 8 GPUs beside the real node, which runs
// shmguard's three replicas. The JobSet controller makes a JobSet of 200 annotated 8-GPU pods
// into its Job's pods while shmguard is rolled to a changed config (helm upgrade); then, over
// hybrid mode's floor, every pod is deleted at once and recreated while one replica is killed
// with SIGKILL. Every pod must come out with the /dev/shm shmguard gives it and no create may
// fail. Between them, the storm is made again while a tenant's pod in a namespace of its own
// floods the webhook's Service with idle TLS connections and raw connects (fleet.Flood): not one
// review may fail open, by the API server's metric or its log. bench/fleet.sh runs the full-size storms (1,000 nodes, every mode, every fault).
func TestAStormOfGPUPodsThroughARolloutAndAKilledReplicaComesOutPatched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e, err := fleet.NewEnv(cp, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	restore, err := fleet.ScaleReplicas(ctx, e, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
	f, err := cp.StartFleet(ctx, 200, 8)
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := cp.StopFleet(stop); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fake nodes of %d GPUs Ready in %.1fs", f.Nodes, f.GPUsPerNode, f.Took.Seconds())
	undo, err := e.InstallPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undo)

	storm := fleet.JobSetStorm(200)
	// What every pod of the storm must get, worked from its annotations and launch, not asked of
	// shmguard: 8 procs × (8 workers × 2 prefetch + 2) × 96Mi = 13824Mi of DataLoader, NCCL's
	// shm transport 8 × 2 channels × 2 peers × 9637892 B = 294.1Mi and its proxy pool across 125
	// pods 8 × 34210180 B = 261.0Mi, 64Mi base, × 1.2 safety: 17332Mi (docs/sources.md §1-§3).
	const jobSetShm = "17332Mi"
	// maxFailOpen: the webhook calls that may fail open in the round (-1: not bounded; hybrid
	// mode's floor holds what a failed call would lose). A rolling update's bound is the one
	// docs/operating.md promises ("Shutdown"): a drained replica closes the connections still
	// idle 2 s after SIGTERM, and a review the API server sends on one at that moment is lost
	// (HTTP/1.1 cannot close an idle connection without that race): at most one per replica
	// replaced. None has been seen. A flood may cost none: the replicas close the flood's own
	// connections to make room (SECURITY.md, "Connections").
	rounds := []struct {
		mode        fleet.Mode
		storm       *fleet.Storm
		fault       *fleet.Fault
		maxFailOpen float64
	}{
		{fleet.Webhook, storm, fleet.RollingUpdate(1), 3},
		{fleet.Webhook, fleet.RestartStorm(storm), fleet.Flood(trainImage, 4096, 15*time.Second), 0},
		{fleet.Hybrid, storm, nil, -1},
		{fleet.Hybrid, fleet.RestartStorm(storm), fleet.KillReplica(), -1},
	}
	// A mode's rounds share its namespace (the restart storm restarts the pods the storm before it
	// made); the namespace of the mode before is deleted first, so that its pods free the GPUs.
	var ns, want string
	var mode fleet.Mode
	for _, r := range rounds {
		if ns == "" || r.mode != mode {
			if ns != "" {
				if err := e.DeleteNamespace(ctx, ns); err != nil {
					t.Fatal(err)
				}
			}
			ns, want, err = e.Namespace(ctx, r.mode, r.storm)
			if err != nil {
				t.Fatal(err)
			}
			if want != jobSetShm {
				t.Errorf("in %s mode a pod of the storm gets /dev/shm %q, want %s", r.mode, want, jobSetShm)
				want = jobSetShm
			}
			mode = r.mode
			last := ns
			t.Cleanup(func() { _ = e.DeleteNamespace(context.Background(), last) })
		}
		openLines, err := fleet.FailOpenLines(cp)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(ctx, r.storm, r.mode, ns, want, r.fault, 8*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		after, err := fleet.FailOpenLines(cp)
		if err != nil {
			t.Fatal(err)
		}
		res.Timeline = nil
		b, _ := json.Marshal(res)
		t.Logf("%s", b)
		if math.IsNaN(res.RunningSeconds) || res.WithoutShm != 0 || res.FailedCreates != 0 || want == "" {
			t.Errorf("%s in %s mode with %q: running after %.1fs, %d of %d pods without the /dev/shm %s, %.0f creates failed",
				res.Storm, res.Mode, res.Fault, res.RunningSeconds, res.WithoutShm, res.Pods, want, res.FailedCreates)
		}
		if r.fault != nil && res.CreatesInFault == 0 {
			t.Errorf("%s: no pod of the storm was created during the fault (%.1fs to %.1fs): it proved nothing",
				r.fault.Name, res.FaultFrom, res.FaultTo)
		}
		failed := after[len(openLines):]
		if r.maxFailOpen >= 0 && (res.FailOpen > r.maxFailOpen || float64(len(failed)) > r.maxFailOpen) {
			t.Errorf("%s in %s mode: %.0f webhook calls failed open by the API server's metric, %d by its log; at most %.0f may",
				res.Fault, res.Mode, res.FailOpen, len(failed), r.maxFailOpen)
			for _, line := range failed[:min(len(failed), 5)] {
				t.Logf("kube-apiserver: %s", line)
			}
		}
	}
	if err := fleet.WaitReplicas(ctx, e.CS, 3); err != nil {
		t.Error(err)
	}
}
