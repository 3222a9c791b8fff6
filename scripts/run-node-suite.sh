#!/usr/bin/env bash
# Runs the node suite (e2e/node) against the control plane in $SHMGUARD_CONTROL_PLANE_DIR, which
# must have a node (scripts/control-plane.sh up --node): a node that is missing, or any of whose
# processes has died, fails the run naming them (SHMGUARD_NODE_SUITE=required), and so does a
# run in which fewer tests ran than e2e/node holds (a skipped test did not run). Prints the tests' lines; the whole log goes
# to $1 when given.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
log=${1:-$(mktemp)}
status=0
(cd e2e && SHMGUARD_NODE_SUITE=required go test -count=1 -timeout 40m -v ./node/) >"$log" 2>&1 || status=$?
grep -a -E '^(=== RUN|--- |ok|FAIL|PASS|SKIPPED)|_test.go|^        |^node: ' "$log" || true
if ((status != 0)); then
  echo "run-node-suite: the node suite failed (exit $status)" >&2
  exit 1
fi
want=$(grep -h -c -E '^func Test[A-Z][A-Za-z0-9_]*\(t \*testing\.T\)' e2e/node/*_test.go | awk '{s+=$1} END{print s}')
# A skipped test did not run: on a node the suite requires, every test runs.
ran=$(grep -a -c -E '^--- (PASS|FAIL): Test' "$log" || true)
skipped=$(grep -a -E '^--- SKIP: Test' "$log" | awk '{print $3}' | paste -sd, - || true)
if ((ran < want)); then
  echo "run-node-suite: $ran of the node suite's $want tests ran${skipped:+; skipped: $skipped}" >&2
  exit 1
fi
