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
logs=$(mktemp -d)
export SHMGUARD_CORPUS_DIR=$empty SHMGUARD_CRD_DIR=$empty
export SHMGUARD_CONTROL_PLANE_DIR=${TMPDIR:-/tmp}/shmguard-e2e-noshared-$$
trap './scripts/control-plane.sh down; rm -rf "$empty" "$logs"' EXIT

ctest --test-dir "$build" --output-on-failure -j2 --output-junit "$logs/ctest.xml"
SHMGUARD_BINARY="$PWD/$build/shmguard" ./scripts/control-plane.sh up >/dev/null
status=0
(cd e2e && go test -count=1 -timeout 20m -v $(go list ./... | grep -v '/node$')) >"$logs/e2e.log" 2>&1 || status=$?
grep -a -E '^(--- FAIL|FAIL|ok|panic)|^    .*_test.go' "$logs/e2e.log" | grep -a -v -- '--- PASS' || true
((status == 0)) || { cat "$logs/e2e.log"; exit 1; }

# Every skip, with its reason: those the missing corpus and CRDs explain, and any other.
./scripts/list-skips.py "Skipped without the corpus and CRDs" "$logs"/*
