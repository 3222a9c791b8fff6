#!/usr/bin/env bash
# shmguard side by side with the admission engines a platform team would pick instead: Kyverno
# (a MutatingPolicy) and Gatekeeper (Assign mutators), bench/peers/, each built from its module at
# the release e2e/tools/{kyverno,gatekeeper} pins (scripts/build-tools.sh --peers) and run on
# loopback beside the control plane as its own manifest deploys it, against no webhook,
# shmguard's webhook and shmguard's policy mode, in interleaved rounds of a closed loop shaped as
# Kyverno's own load test (e2e/cmd/admission-latency --peers). Writes
# bench/results/<date>-peers.md (the command, the commit, the versions, a table per load), the
# figures as JSON lines (<date>-peers.jsonl) and a plot of them over the load (<date>-peers.png).
#   bench/peers.sh [ROUNDS, 3] [LOAD...]
# Each LOAD is USERSxCREATES (virtual users, creates per user, per contender and round); by
# default 1x300 10x100 100x20: one client alone, a few, and Kyverno's own test's 100 users.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH
dir=${SHMGUARD_CONTROL_PLANE_DIR:-${TMPDIR:-/tmp}/shmguard-control-plane}
export SHMGUARD_CONTROL_PLANE_DIR=$dir
"$root/scripts/control-plane.sh" up >/dev/null
peers=$("$root/scripts/build-tools.sh" --peers)
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
(cd "$root/e2e" && GOFLAGS=-mod=readonly go build -o "$cache/admission-latency" ./cmd/admission-latency)
(cd "$root/bench/load/gopeer" && GOFLAGS=-mod=readonly go build -o "$cache/gopeer" .)
rounds=${1:-3}
loads=("${@:2}")
((${#loads[@]})) || loads=(1x300 10x100 100x20)
out=$root/bench/results/$(date -u +%F)-peers.md
points=${out%.md}.jsonl
rm -f "$points"
table=$(mktemp)
trap 'rm -f "$table"' EXIT
for load in "${loads[@]}"; do
  [[ $load =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "peers.sh: a load is USERSxCREATES, not $load" >&2; exit 2; }
  "$cache/admission-latency" --dir "$dir" --gopeer "$cache/gopeer" --peers "$peers" \
    --vus "${BASH_REMATCH[1]}" --iterations "${BASH_REMATCH[2]}" --rounds "$rounds" --json "$points" >>"$table"
  echo >>"$table"
done
{
  echo "# shmguard, Kyverno and Gatekeeper on one control plane, $(date -u +%F)"
  echo
  echo "Commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo ' (with changes)');" \
    "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo);" \
    "rerun with \`bench/peers.sh $rounds ${loads[*]}\`."
  echo
  cat "$table"
  echo "![added p50, CPU and memory over the load]($(basename "${out%.md}.png"))"
} >"$out"
"$cache/admission-latency" --plot "$points" --png "${out%.md}.png" \
  --title "shmguard, Kyverno, Gatekeeper: $(date -u +%F), $rounds rounds"
cat "$out"
echo "written to $out; the control plane stays up: SHMGUARD_CONTROL_PLANE_DIR=$dir scripts/control-plane.sh down" >&2
