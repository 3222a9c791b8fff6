#!/usr/bin/env python3
"""Splits one request's instructions in `shmguard-webhook` by stage, from two callgrind profiles
of the server taken under the same load for different lengths of time (bench/instructions.sh):
the difference of each function's inclusive count over the difference in requests is what one
request costs there; start-up, handshakes and shutdown cancel out.

Usage: stages.py SHORT.cg LONG.cg REQUESTS_SHORT REQUESTS_LONG
Prints one line, "stage=instructions ..." in the order of STAGES, then total=... .
A stage whose functions the binary does not have (an older build) prints "-".
"""
import re
import subprocess
import sys

# (stage, [(sign, function regex)]): inclusive counts summed; a minus sign removes a nested part.
STAGES = [
    ("tls_read", [(1, r"^SSL_read$")]),
    ("http_head", [(1, r"ParseRequestHead$")]),
    # The connection's HTTP side around the head: finding the body, buffers, framing the answer.
    ("body_framing", [(1, r"HttpConnection::Handle$"), (-1, r"ParseRequestHead$"),
                      (-1, r"WebhookServer::HandleWebhook$"), (-1, r"http::AppendResponse$")]),
    ("json", [(1, r"io::ParseJsonView$"), (1, r"shmguard::ParseReview$")]),
    ("decision", [(1, r"shmguard::Decide$"), (-1, r"shmguard::RemedyFor$")]),
    ("patch", [(1, r"shmguard::RemedyFor$")]),
    ("response", [(1, r"server::\(anonymous namespace\)::Review$"), (1, r"server::Base64$"),
                  (1, r"http::AppendResponse$")]),
    ("tls_write", [(1, r"^SSL_write$")]),
    ("log_metrics", [(1, r"server::LogDecision$"), (1, r"Metrics::ObserveRequest$")]),
]

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\*?\s*(.+?)\s*(?:\[.*\])?$")


def inclusive(profile):
    """Function name (without its argument list) -> inclusive instructions."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", profile],
                         capture_output=True, text=True, check=True).stdout
    costs = {}
    total = 0
    for line in out.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
            continue
        m = LINE.match(line)
        if not m or ":" not in m.group(2):
            continue
        where = m.group(2)
        name = where.split(":", 1)[1] if re.match(r"^[^:]*\.(cc|c|h|hpp|cpp|inc):", where) or where.startswith("???:") else where
        name = re.sub(r"\(.*$", "", name).strip()
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs, total


def stage(costs, parts):
    value, found = 0, False
    for sign, pattern in parts:
        matches = [c for n, c in costs.items() if re.search(pattern, n)]
        if sign > 0 and matches:
            found = True
        value += sign * sum(matches)
    return value if found else None


def main():
    short, long_, n_short, n_long = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    a, total_a = inclusive(short)
    b, total_b = inclusive(long_)
    n = n_long - n_short
    fields = []
    for name, parts in STAGES:
        va, vb = stage(a, parts), stage(b, parts)
        fields.append("%s=%s" % (name, "-" if va is None or vb is None else (vb - va) // n))
    fields.append("total=%d" % ((total_b - total_a) // n))
    print(" ".join(fields))


if __name__ == "__main__":
    main()
