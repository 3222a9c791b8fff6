package fleet

// Kyverno and Gatekeeper as modes of a storm (bench/fleet.sh --peers): the admission engines a
// platform team would run instead of shmguard, each with the policy bench/peers/ holds for it,
// run by controlplane.StartPeer beside the control plane (one replica, in the network namespace
// the API server runs in) for their own storms only, in a namespace shmguard leaves alone.

import (
	"context"
	"fmt"
	"path/filepath"

	"shmguard.io/e2e/controlplane"
)

const (
	Kyverno    Mode = "kyverno"    // Kyverno's admission controller with a MutatingPolicy
	Gatekeeper Mode = "gatekeeper" // Gatekeeper's controller manager with Assign mutators
)

// peerModes are each peer mode's process, its policy under bench/peers/, and the suffix of its
// mutating webhooks' names in the API server's metrics.
var peerModes = map[Mode]struct{ process, policy, webhooks string }{
	Kyverno:    {controlplane.KyvernoName, "kyverno-dshm.yaml", "dshm-for-gpu-pods"},
	Gatekeeper: {controlplane.GatekeeperName, "gatekeeper-dshm.yaml", "gatekeeper.sh"},
}

// IsPeer says whether m is a peer's mode rather than one of shmguard's.
func (m Mode) IsPeer() bool {
	_, ok := peerModes[m]
	return ok
}

// webhooks matches the names of the mode's mutating webhooks in the API server's metrics.
func (m Mode) webhooks() string {
	if p, ok := peerModes[m]; ok {
		return "~" + p.webhooks
	}
	return "~.shmguard.io"
}

// UsePeer installs the peer of mode m from binDir (scripts/build-tools.sh --peers), starts it
// and creates its policy; what it returns deletes the policy and stops the peer. One peer runs
// at a time, and only for its own storms: the Kyverno policy reaches GPU pods in every namespace.
func (e *Env) UsePeer(ctx context.Context, m Mode, binDir string) (func(), error) {
	p, ok := peerModes[m]
	if !ok {
		return nil, fmt.Errorf("%s is not a peer's mode", m)
	}
	policy, err := controlplane.ReadManifest(filepath.Join(e.CP.RepoRoot(), "bench", "peers", p.policy))
	if err != nil {
		return nil, err
	}
	if err := e.CP.InstallPeer(ctx, binDir, p.process); err != nil {
		return nil, fmt.Errorf("installing %s: %w", p.process, err)
	}
	stop := func() {
		if err := e.CP.DeleteObjects(context.Background(), policy); err != nil {
			e.Log("deleting %s's policy: %v", p.process, err)
		}
		if err := e.CP.StopPeer(context.Background(), p.process); err != nil {
			e.Log("stopping %s: %v", p.process, err)
		}
	}
	if err := e.CP.StartPeer(ctx, binDir, p.process); err != nil {
		stop()
		return nil, fmt.Errorf("starting %s: %w", p.process, err)
	}
	if err := e.CP.CreatePeerPolicy(ctx, policy); err != nil {
		stop()
		return nil, fmt.Errorf("%s's policy: %w", p.process, err)
	}
	return stop, nil
}

// peerUse is the CPU seconds so far of mode m's peer process, with its pid (0: not a peer's
// mode, or it does not run).
func (e *Env) peerUse(m Mode) (int, float64) {
	p, ok := peerModes[m]
	if !ok {
		return 0, 0
	}
	pid := e.CP.Pid(p.process)
	if pid == 0 {
		return 0, 0
	}
	cpu, _ := controlplane.CPUSeconds(pid)
	return pid, cpu
}

// peerSince is the peer process's use over a storm that began at `before` CPU seconds: the
// process stands for the replicas (PeakMiB its VmHWM, RSSMiB its VmRSS at the end).
func (e *Env) peerSince(m Mode, before float64) []ReplicaUse {
	pid, cpu := e.peerUse(m)
	if pid == 0 {
		return nil
	}
	peak, _ := controlplane.PeakRSS(pid)
	rss, _ := controlplane.RSS(pid)
	return []ReplicaUse{{Pod: peerModes[m].process + " (process)", CPUSeconds: cpu - before,
		PeakMiB: float64(peak) / (1 << 20), RSSMiB: float64(rss) / (1 << 20)}}
}
