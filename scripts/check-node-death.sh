#!/usr/bin/env bash
# A node whose kubelet has died must fail the node suite, naming the dead process, rather than
# let it pass as skipped: kills the kubelet of the control plane in $SHMGUARD_CONTROL_PLANE_DIR
# (brought up with --node; it is not restarted: `down` follows) and runs scripts/run-node-suite.sh,
# which must fail and say "kubelet".
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SHMGUARD_CONTROL_PLANE_DIR:?}
pid=$(cat "$dir/kubelet.pid")
kill -9 "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
out=$(./scripts/run-node-suite.sh 2>&1) && { echo "check-node-death: the node suite passed with its kubelet dead" >&2; exit 1; }
if ! grep -q 'kubelet' <<<"$out"; then
  echo "check-node-death: the node suite failed without naming the dead kubelet:" >&2
  echo "$out" >&2
  exit 1
fi
echo "check-node-death: with its kubelet dead the node suite fails: $(grep -m1 kubelet <<<"$out")"
