#!/usr/bin/env bash
# Runs the tests that read ../shared once more as a newcomer's lone clone runs them: the corpus
# (SHMGUARD_CORPUS_DIR) and the upstream CRDs (SHMGUARD_CRD_DIR) pointed at an empty directory.
# They must still pass, skipping visibly what only that data can show; the skips are listed at
# the end. Which tests those are is found, not listed by hand (scripts/shared-tests.py): the
# Catch2 cases tagged [corpus] (every case that reads the corpus must be, which it checks) and
# the end-to-end tests that reach the corpus or the CRDs (every other one is checked not to name
# a custom resource's group). The rest of both suites reads nothing of ../shared, and ran in
# scripts/test.sh. Uses the build that scripts/test.sh made (${BUILD_DIR:-build}).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
build=${BUILD_DIR:-build}
empty=$(mktemp -d)
logs=$(mktemp -d)
export SHMGUARD_CORPUS_DIR=$empty SHMGUARD_CRD_DIR=$empty
unset SHMGUARD_REQUIRE_SHARED
export SHMGUARD_CONTROL_PLANE_DIR=${TMPDIR:-/tmp}/shmguard-e2e-noshared-$$
trap './scripts/control-plane.sh down; rm -rf "$empty" "$logs"' EXIT

./scripts/shared-tests.py --catch tests
pattern=$(./scripts/shared-tests.py e2e)
ctest --test-dir "$build" --output-on-failure -j2 -L corpus --output-junit "$logs/ctest.xml"
SHMGUARD_BINARY="$PWD/$build/shmguard" ./scripts/control-plane.sh up >/dev/null
status=0
(cd e2e && go test -count=1 -timeout 20m -v -run "$pattern" .) >"$logs/e2e.log" 2>&1 || status=$?
grep -a -E '^(--- FAIL|FAIL|ok|panic)|^    .*_test.go' "$logs/e2e.log" | grep -a -v -- '--- PASS' || true
((status == 0)) || { cat "$logs/e2e.log"; exit 1; }

# Every skip, with its reason: those the missing corpus and CRDs explain, and any other.
./scripts/list-skips.py "Skipped without the corpus and CRDs" "$logs"/*
