#!/usr/bin/env bash
# Runs one of the node benchmarks (a command of e2e/cmd) against the control plane with a node
# (scripts/control-plane.sh up --node; started here if none runs in $SHMGUARD_CONTROL_PLANE_DIR),
# as root:
#   bench/on-node.sh TOOL [ARGS...]      TOOL is pod-start-latency or agent-cost; --dir is added
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:?usage: bench/on-node.sh TOOL [ARGS...]}
shift
export PATH=/usr/local/go/bin:$PATH
dir=${SHMGUARD_CONTROL_PLANE_DIR:-${TMPDIR:-/tmp}/shmguard-control-plane}
export SHMGUARD_CONTROL_PLANE_DIR=$dir
"$root/scripts/control-plane.sh" up --node >/dev/null
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
(cd "$root/e2e" && go build -o "$cache/$tool" "./cmd/$tool")
"$cache/$tool" --dir "$dir" "$@"
