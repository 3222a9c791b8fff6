#!/usr/bin/env python3
"""Turns bench/run.sh's CSVs into the markdown tables of bench/README.md (medians of rounds).

Usage: report.py RUNS.csv AUDIT.csv TLS.csv SHMGUARD_RSS_KIB GO_RSS_KIB [BEFORE_RSS_KIB BEFORE_REV]
With BEFORE_REV (bench/run.sh's BEFORE=REV), that commit's server is a column of its own and
every shmguard rate is also given as a ratio to it.
"""
import csv
import statistics
import sys
from collections import defaultdict

BODIES = [("pod-10k", "10 KB pod (generated)"), ("pod-200k", "200 KB pod (generated)"),
          ("jobset", "JobSet (generated)"), ("api-pod", "pod the Job controller created for a JobSet (API server's)"),
          ("api-jobset", "JobSet, two replicated jobs (API server's)")]


def main():
    runs, audit, tls, rss_kib, go_rss_kib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    before_rss_kib = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    before = sys.argv[7] if len(sys.argv) > 7 else ""
    closed = defaultdict(list)
    open_loop = defaultdict(list)
    for r in csv.DictReader(open(runs)):
        key = (r["target"], r["body"], int(r["connections"]))
        row = (float(r["rps"]), float(r["p50_us"]), float(r["p99_us"]), int(float(r["errors"])))
        (closed if r["kind"] == "closed" else open_loop)[key].append(row)
    med = lambda rows, i: statistics.median(x[i] for x in rows)
    print("### Admission throughput (closed loop, wrk, TLS 1.3 keep-alive; medians of %d rounds)\n"
          % len(next(iter(closed.values()))))
    print("nginx's own rate is beside every ratio: a slow host lifts ratios.\n")
    head = "| body | conns | shmguard req/s | p50 ms | p99 ms | nginx req/s | Go req/s | × nginx | × Go |"
    rule = "|---|---|---|---|---|---|---|---|---|"
    if before:
        print("`%s` is the same server at commit %s, run in the same rounds.\n" % ("before", before))
        head += " %s req/s | × %s |" % (before, before)
        rule += "---|---|"
    print(head)
    print(rule)
    for body, _ in BODIES:
        for conns in (1, 8, 32):
            s, n, g, b = (closed.get((t, body, conns)) for t in ("shmguard", "nginx", "go", "before"))
            if not s:
                continue
            errors = sum(x[3] for x in s)
            line = "| %s | %d | %.0f | %.2f | %.2f | %.0f | %.0f | **%.2f** | **%.1f**%s |" % (
                body, conns, med(s, 0), med(s, 1) / 1000, med(s, 2) / 1000, med(n, 0), med(g, 0),
                med(s, 0) / med(n, 0), med(s, 0) / med(g, 0), " (%d errors)" % errors if errors else "")
            if before and b:
                line += " %.0f | **%.2f** |" % (med(b, 0), med(s, 0) / med(b, 0))
            print(line)
    print("\nBodies: " + "; ".join("`%s` %s" % b for b in BODIES) + ".")
    print("\n### Fixed rate 2,000 req/s, 10 KB pod, 8 connections (open loop: latency from the scheduled send)\n")
    print("| target | p50 ms | p99 ms | errors |")
    print("|---|---|---|---|")
    for target in ("shmguard", "nginx", "go") + (("before",) if before else ()):
        rows = open_loop[(target, "pod-10k", 8)]
        label = "shmguard at %s" % before if target == "before" else target
        print("| %s | %.2f | %.2f | %d |" % (label, med(rows, 1) / 1000, med(rows, 2) / 1000, sum(x[3] for x in rows)))
    print("\nPeak RSS over the whole run: shmguard %.1f MiB, Go peer %.1f MiB%s\n" % (
        rss_kib / 1024, go_rss_kib / 1024, ", shmguard at %s %.1f MiB" % (before, before_rss_kib / 1024) if before else ""))

    tls_runs = defaultdict(list)
    for r in csv.DictReader(open(tls)):
        tls_runs[(r["config"], r["mode"])].append((float(r["rps"]), int(r["errors"])))
    rate = lambda k: statistics.median(x[0] for x in tls_runs[k])
    print("### TLS: 1.3 against 1.2, and mutual TLS (bench/load/tls_load, 10 KB pod, 8 connections; medians)\n")
    print("| configuration | keep-alive req/s | full handshakes/s (a connection per request) | errors |")
    print("|---|---|---|---|")
    labels = {"tls1.3": "TLS 1.3 (default)", "tls1.2": "TLS 1.2 (`--tls-min-version VersionTLS12`)",
              "mtls1.3": "TLS 1.3 + mutual TLS (`--client-ca-file`)"}
    for config in ("tls1.3", "tls1.2", "mtls1.3"):
        errors = sum(x[1] for m in ("keep-alive", "handshake") for x in tls_runs[(config, m)])
        print("| %s | %.0f | %.0f | %d |" % (labels[config], rate((config, "keep-alive")), rate((config, "handshake")),
                                             errors))
    base_ka, base_hs = rate(("tls1.3", "keep-alive")), rate(("tls1.3", "handshake"))
    print("\nAgainst TLS 1.3: TLS 1.2 %+.0f %% keep-alive, %+.0f %% handshakes; mutual TLS %+.0f %% keep-alive, "
          "%+.0f %% handshakes.\n" % (100 * (rate(("tls1.2", "keep-alive")) / base_ka - 1),
                                      100 * (rate(("tls1.2", "handshake")) / base_hs - 1),
                                      100 * (rate(("mtls1.3", "keep-alive")) / base_ka - 1),
                                      100 * (rate(("mtls1.3", "handshake")) / base_hs - 1)))

    audit_runs = defaultdict(list)
    for r in csv.DictReader(open(audit)):
        key = (int(r["objects"]), r["format"], r["jobs"], int(r["bytes"]))
        audit_runs[key].append((float(r["seconds"]), int(r["peak_rss_kib"])))
    print("### Audit (`shmguard audit -j N -o table`, one process, whole stream; medians of %d rounds)\n"
          % len(next(iter(audit_runs.values()))))
    print("| objects | input | jobs | size MB | seconds | MB/s | µs/object | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for (n, fmt, jobs, size), rows in audit_runs.items():  # in the order run.sh ran them
        secs = statistics.median(x[0] for x in rows)
        print("| %d | %s | %s | %.1f | %.2f | %.1f | %.1f | %.0f |" % (
            n, "YAML stream" if fmt == "yaml" else "kind: List JSON", jobs, size / 1e6, secs,
            size / 1e6 / secs if secs else 0, secs * 1e6 / n, max(x[1] for x in rows) / 1024))


if __name__ == "__main__":
    main()
