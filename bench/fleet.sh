#!/usr/bin/env bash
# Storms of GPU pods over a simulated fleet (KWOK's fake nodes, the real JobSet controller), in
# every mode of shmguard, and faults in the middle of them (e2e/cmd/fleet-bench, run by
# bench/on-node.sh): writes bench/fleet/results.json, table.md, storms.png and faults.png, and the
# table into bench/README.md between its fleet markers.
#   bench/fleet.sh [--nodes 1000] [--pods 1000] [--rounds 3] [--only storms|faults|peers|plots] [--resume] [--peers]
# (--resume keeps the results already in bench/fleet/results.json; --only plots writes the table
# and plots of those again, for a run stopped before its end; --peers builds Kyverno and
# Gatekeeper, scripts/build-tools.sh --peers, and runs the JobSet storm with each of them too)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
args=()
for a in "$@"; do
  if [[ $a == --peers ]]; then
    args+=(--peers "$("$root/scripts/build-tools.sh" --peers)")
  else
    args+=("$a")
  fi
done
"$root/bench/on-node.sh" fleet-bench --out "$root/bench/fleet" "${args[@]}"
python3 - "$root/bench/README.md" "$root/bench/fleet/table.md" <<'PY'
import re, sys
readme, table = open(sys.argv[1]).read(), open(sys.argv[2]).read()
begin, end = "<!-- fleet:begin -->", "<!-- fleet:end -->"
if begin not in readme:
    sys.exit("bench/README.md has no fleet markers")
head, rest = readme.split(begin, 1)
_, tail = rest.split(end, 1)
open(sys.argv[1], "w").write(head + begin + "\n" + table + end + tail)
PY
