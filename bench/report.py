#!/usr/bin/env python3
"""Turns bench/run.sh's CSVs into the markdown tables of bench/README.md (medians of rounds)."""
import csv
import statistics
import sys
from collections import defaultdict

def main():
    runs, audit, rss_kib = sys.argv[1], sys.argv[2], int(sys.argv[3])
    closed = defaultdict(list)
    open_loop = defaultdict(list)
    for r in csv.DictReader(open(runs)):
        key = (r["target"], r["body"], int(r["connections"]))
        row = (float(r["rps"]), float(r["p50_us"]), float(r["p99_us"]), int(float(r["errors"])))
        (closed if r["kind"] == "closed" else open_loop)[key].append(row)
    med = lambda rows, i: statistics.median(x[i] for x in rows)
    print("### Admission throughput (closed loop, wrk, TLS keep-alive; medians of %d rounds)\n"
          % len(next(iter(closed.values()))))
    print("| body | conns | shmguard req/s | p50 ms | p99 ms | nginx req/s | p99 ms | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for body in ("pod-10k", "pod-200k", "jobset"):
        for conns in (1, 8, 32):
            s, n = closed[("shmguard", body, conns)], closed[("nginx", body, conns)]
            errors = sum(x[3] for x in s)
            print("| %s | %d | %.0f | %.2f | %.2f | %.0f | %.2f | **%.0f%%**%s |" % (
                body, conns, med(s, 0), med(s, 1) / 1000, med(s, 2) / 1000, med(n, 0), med(n, 2) / 1000,
                100 * med(s, 0) / med(n, 0), " (%d errors)" % errors if errors else ""))
    print("\n### Fixed rate 2,000 req/s, 10 KB pod, 8 connections (open loop: latency from the scheduled send)\n")
    print("| target | p50 ms | p99 ms | errors |")
    print("|---|---|---|---|")
    for target in ("shmguard", "nginx"):
        rows = open_loop[(target, "pod-10k", 8)]
        print("| %s | %.2f | %.2f | %d |" % (target, med(rows, 1) / 1000, med(rows, 2) / 1000, sum(x[3] for x in rows)))
    print("\nshmguard peak RSS over the whole server run: %.1f MiB\n" % (rss_kib / 1024))
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
