#!/usr/bin/env bash
# Runs the unit and end-to-end suites once more as a newcomer's lone clone runs them: the corpus
# (SHMGUARD_CORPUS_DIR) and the upstream CRDs (SHMGUARD_CRD_DIR) pointed at an empty directory.
# Both suites must still pass, skipping visibly what only that data can show; the skips are
# listed at the end. Uses the build that scripts/test.sh made (${BUILD_DIR:-build}).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
build=${BUILD_DIR:-build}
empty=$(mktemp -d)
log=$(mktemp)
export SHMGUARD_CORPUS_DIR=$empty SHMGUARD_CRD_DIR=$empty
export SHMGUARD_CONTROL_PLANE_DIR=${TMPDIR:-/tmp}/shmguard-e2e-noshared-$$
trap './scripts/control-plane.sh down; rm -rf "$empty" "$log"' EXIT

ctest --test-dir "$build" --output-on-failure -j2 | tee "$log"
SHMGUARD_BINARY="$PWD/$build/shmguard" ./scripts/control-plane.sh up >/dev/null
(cd e2e && go test -count=1 -timeout 20m -v ./...) >>"$log" 2>&1 || { cat "$log"; exit 1; }
grep -E '^(ok|FAIL|---)' "$log" | grep -v -- '--- PASS' || true

echo "Skipped without the corpus and CRDs:"
grep -E '\(Skipped\)|SKIPPED' "$log" | sed -E 's/^ +/  /' | sort -u
