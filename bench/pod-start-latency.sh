#!/usr/bin/env bash
# What shmguard costs pods on a real node and what its pods cost the node: GPU pod start
# latency (create -> Running) with and without shmguard in interleaved rounds, and shmguard's
# pods' CPU time and memory (from their cgroups) over a burst of GPU pod creates. Runs on the
# control plane with a node (scripts/control-plane.sh up --node; started here if none runs in
# $SHMGUARD_CONTROL_PLANE_DIR), as root.
#   bench/pod-start-latency.sh [PODS_PER_ROUND [ROUNDS [BURST]]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH
dir=${SHMGUARD_CONTROL_PLANE_DIR:-${TMPDIR:-/tmp}/shmguard-control-plane}
export SHMGUARD_CONTROL_PLANE_DIR=$dir
"$root/scripts/control-plane.sh" up --node >/dev/null
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
(cd "$root/e2e" && go build -o "$cache/pod-start-latency" ./cmd/pod-start-latency)
"$cache/pod-start-latency" --dir "$dir" --pods "${1:-20}" --rounds "${2:-3}" --burst "${3:-200}"
