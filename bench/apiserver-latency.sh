#!/usr/bin/env bash
# shmguard's latency as kube-apiserver measures it: N GPU pod creates (default 1,000), one at a
# time, with shmguard's webhooks registered and then without them, on the loopback control plane
# (scripts/control-plane.sh; started here if none runs in $SHMGUARD_CONTROL_PLANE_DIR). Prints
# p50/p99 of apiserver_admission_webhook_admission_duration_seconds for shmguard's webhooks and of
# apiserver_request_duration_seconds for pod creates, beside the latency the client measured.
#   bench/apiserver-latency.sh [PODS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH
dir=${SHMGUARD_CONTROL_PLANE_DIR:-${TMPDIR:-/tmp}/shmguard-control-plane}
export SHMGUARD_CONTROL_PLANE_DIR=$dir
"$root/scripts/control-plane.sh" up >/dev/null
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
(cd "$root/e2e" && go build -o "$cache/admission-latency" ./cmd/admission-latency)
"$cache/admission-latency" --dir "$dir" --pods "${1:-1000}"
