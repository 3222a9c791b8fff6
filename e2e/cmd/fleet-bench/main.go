// Command fleet-bench runs the full-size storms of e2e/fleet on the control plane of
// `scripts/control-plane.sh up --node`: KWOK's fake GPU nodes, the JobSet controller, shmguard's
// replicas on the real node. Each storm runs in each mode (none, webhook, policy, hybrid); then
// each fault is injected into a JobSet storm, `--rounds` times, in webhook and hybrid mode. With
// --peers, the JobSet storm and its mass restart also run with Kyverno and with Gatekeeper in
// shmguard's place (fleet/peers.go). It writes the results (JSON), a Markdown table, and a PNG
// of creates per second over time. bench/fleet.sh runs it.
//
//	fleet-bench --dir DIR [--nodes 1000] [--pods 1000] [--rounds 3] [--out DIR] [--only storms|faults|peers] [--resume] [--peers DIR]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"shmguard.io/e2e/controlplane"
	"shmguard.io/e2e/fleet"
)

func main() {
	dir := flag.String("dir", "", "the control plane's state directory (with a node)")
	nodes := flag.Int("nodes", 1000, "fake nodes of 8 GPUs")
	pods := flag.Int("pods", 1000, "pods of each storm")
	rounds := flag.Int("rounds", 3, "times each fault is repeated")
	out := flag.String("out", "bench/fleet", "the directory results.json, table.md and the plots go to")
	only := flag.String("only", "", "storms, faults or peers (with --peers): run only those; plots: write the table and plots of OUT/results.json again")
	outage := flag.Duration("outage", 60*time.Second, "how long every replica is down in the outage fault")
	resume := flag.Bool("resume", false, "keep the results already in OUT/results.json and add this run's")
	peers := flag.String("peers", "", "scripts/build-tools.sh --peers's directory: the JobSet storm with Kyverno and Gatekeeper too")
	flag.Parse()
	if *only == "plots" {
		if err := replot(*out, *pods, *nodes); err != nil {
			fmt.Fprintf(os.Stderr, "fleet-bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: fleet-bench --dir DIR [--nodes 1000] [--pods 1000] [--rounds 3] [--out DIR]")
		os.Exit(2)
	}
	if err := run(*dir, *nodes, *pods, *rounds, *out, *only, *outage, *resume, *peers); err != nil {
		fmt.Fprintf(os.Stderr, "fleet-bench: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string, nodes, pods, rounds int, out, only string, outage time.Duration, resume bool, peers string) error {
	cp, err := controlplane.Load(dir)
	if err != nil {
		return err
	}
	log := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s fleet-bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	e, err := fleet.NewEnv(cp, log)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	restore, err := fleet.ScaleReplicas(ctx, e, 3)
	if err != nil {
		return err
	}
	defer restore()
	f, err := cp.StartFleet(ctx, nodes, 8)
	defer func() {
		if err := cp.StopFleet(context.Background()); err != nil {
			log("stopping the fleet: %v", err)
		}
	}()
	if err != nil {
		return err
	}
	log("%d fake nodes Ready in %.1fs", f.Nodes, f.Took.Seconds())
	undo, err := e.InstallPolicies(ctx)
	if err != nil {
		return err
	}
	defer undo()

	var results []*fleet.Result
	if resume {
		b, err := os.ReadFile(filepath.Join(out, "results.json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &results); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(out, "results.json"), err)
		}
	}
	save := func() error {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "results.json"), b, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, "table.md"), []byte(fleet.Table(results)), 0o644)
	}
	// one runs a storm (and the mass restart after a JobSet storm) in a namespace of mode m.
	one := func(m fleet.Mode, s *fleet.Storm, fault *fleet.Fault, round int, restart bool) error {
		ns, want, err := e.Namespace(ctx, m, s)
		if err != nil {
			return err
		}
		if m == fleet.None {
			probe, w, err := e.Namespace(ctx, fleet.Webhook, s) // what shmguard would give, for the count
			if err != nil {
				return err
			}
			want = w
			if err := e.DeleteNamespace(ctx, probe); err != nil {
				return err
			}
		}
		defer func() {
			if err := e.DeleteNamespace(ctx, ns); err != nil {
				log("%v", err)
			}
		}()
		storms := []*fleet.Storm{s}
		if restart {
			storms = append(storms, fleet.RestartStorm(s))
		}
		for _, st := range storms {
			log("%s storm of %d pods, mode %s, fault %q, round %d", st.Name, st.Pods, m, faultName(fault), round)
			r, err := e.Run(ctx, st, m, ns, want, fault, 15*time.Minute)
			if err != nil {
				return err
			}
			r.Round = round
			results = append(results, r)
			log("  all exist %.1fs, all Running %.1fs, %d without their /dev/shm, %.0f failed creates, %.0f failed open %s",
				r.ExistSeconds, r.RunningSeconds, r.WithoutShm, r.FailedCreates, r.FailOpen, r.FaultNote)
			if err := save(); err != nil {
				return err
			}
			fault = nil // the restart after a faulted storm runs clean
		}
		return nil
	}
	modes := []fleet.Mode{fleet.None, fleet.Webhook, fleet.Policy, fleet.Hybrid}
	if only == "peers" {
		modes = nil
	}
	if only != "faults" {
		for _, m := range modes {
			if err := one(m, fleet.JobSetStorm(pods), nil, 1, true); err != nil {
				return err
			}
			if err := one(m, fleet.DeploymentStorm(8, pods), nil, 1, false); err != nil {
				return err
			}
		}
		if peers != "" {
			for _, m := range []fleet.Mode{fleet.Kyverno, fleet.Gatekeeper} {
				stop, err := e.UsePeer(ctx, m, peers)
				if err != nil {
					return err
				}
				err = one(m, fleet.JobSetStorm(pods), nil, 1, true)
				stop()
				if err != nil {
					return err
				}
			}
		}
		var jobsets []*fleet.Result
		for _, r := range results {
			if r.Storm == "jobset" {
				jobsets = append(jobsets, r)
			}
		}
		if err := fleet.PlotCreates(jobsets, fmt.Sprintf("A JobSet of %d 8-GPU pods over %d KWOK nodes", pods, nodes),
			filepath.Join(out, "storms.png")); err != nil {
			return err
		}
	}
	if only != "storms" && only != "peers" {
		var faulted []*fleet.Result
		for round := 1; round <= rounds; round++ {
			for _, m := range []fleet.Mode{fleet.Webhook, fleet.Hybrid} {
				for _, fault := range []*fleet.Fault{fleet.RollingUpdate(round), fleet.KillReplica(), fleet.Outage(outage),
					fleet.RestartAPIServer()} {
					n := len(results)
					if err := one(m, fleet.JobSetStorm(pods), fault, round, false); err != nil {
						return err
					}
					if round == 1 {
						faulted = append(faulted, results[n:]...)
					}
				}
			}
		}
		if err := fleet.PlotCreates(faulted, fmt.Sprintf("A JobSet of %d pods with a fault once a quarter exist (round 1)", pods),
			filepath.Join(out, "faults.png")); err != nil {
			return err
		}
	}
	fmt.Print(fleet.Table(results))
	return save()
}

func faultName(f *fleet.Fault) string {
	if f == nil {
		return ""
	}
	return strings.TrimSpace(f.Name)
}

// replot writes table.md, storms.png and faults.png again from out/results.json, as a run does at
// its end: for a run stopped before it.
func replot(out string, pods, nodes int) error {
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		return err
	}
	var results []*fleet.Result
	if err := json.Unmarshal(b, &results); err != nil {
		return err
	}
	var storms, faulted []*fleet.Result
	for _, r := range results {
		switch {
		case r.Storm == "jobset" && r.Fault == "":
			storms = append(storms, r)
		case r.Fault != "" && r.Round == 1:
			faulted = append(faulted, r)
		}
	}
	if err := fleet.PlotCreates(storms, fmt.Sprintf("A JobSet of %d 8-GPU pods over %d KWOK nodes", pods, nodes),
		filepath.Join(out, "storms.png")); err != nil {
		return err
	}
	if err := fleet.PlotCreates(faulted, fmt.Sprintf("A JobSet of %d pods with a fault once a quarter exist (round 1)", pods),
		filepath.Join(out, "faults.png")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "table.md"), []byte(fleet.Table(results)), 0o644)
}
