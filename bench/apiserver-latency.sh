#!/usr/bin/env bash
# GPU pod creates as kube-apiserver measures them, on the loopback control plane
# (scripts/control-plane.sh; started here if none runs in $SHMGUARD_CONTROL_PLANE_DIR), with five
# registrations in interleaved rounds of one run: shmguard as the chart registers it, shmguard's
# /mutate alone, the Go peer (bench/load/gopeer) as the only mutating webhook, shmguard's policy mode
# (`shmguard policy export`, no webhook), and no webhook.
# Prints the client's p50/p90/p99 and, per webhook, admission policy and policy plugin, the API
# server's calls per create and mean duration per call (e2e/cmd/admission-latency). The chart's registration is restored at the end.
#   bench/apiserver-latency.sh [PODS per registration and round, 500] [ROUNDS, 2]
# With POLICY_BEFORE=/path/to/another/shmguard, the policies that binary exports are one more
# registration in the same rounds: before and after of a change to the policies.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH
dir=${SHMGUARD_CONTROL_PLANE_DIR:-${TMPDIR:-/tmp}/shmguard-control-plane}
export SHMGUARD_CONTROL_PLANE_DIR=$dir
"$root/scripts/control-plane.sh" up >/dev/null
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
mkdir -p "$cache"
(cd "$root/e2e" && GOFLAGS=-mod=readonly go build -o "$cache/admission-latency" ./cmd/admission-latency)
(cd "$root/bench/load/gopeer" && GOFLAGS=-mod=readonly go build -o "$cache/gopeer" .)
"$cache/admission-latency" --dir "$dir" --gopeer "$cache/gopeer" --pods "${1:-500}" --rounds "${2:-2}" \
  ${POLICY_BEFORE:+--policy-before "$POLICY_BEFORE"}
echo "the control plane stays up for another run; take it down with: SHMGUARD_CONTROL_PLANE_DIR=$dir scripts/control-plane.sh down" >&2
