#!/usr/bin/env bash
# Fresh machine -> all tests: installs dependencies (Debian packages), checks the formatting
# (clang-format, gofmt, go vet) and that each layer includes only the ones below it
# (scripts/check-layers.sh), builds with warnings as errors, runs every Catch2 test through
# CTest, the alerts' tests (scripts/check-alerts.sh: promtool), the report's page in Debian's
# chromium (scripts/check-report.sh), then the end-to-end suite (e2e/) against a real control plane (scripts/control-plane.sh:
# etcd, kube-apiserver, kube-controller-manager, kubectl and helm built from their Go modules,
# cached outside the tree), then the node suite (e2e/node) on a real node with shmguard installed
# from its own image (control-plane.sh up --node; the images are built by
# scripts/build-images.sh, in the background from the start; scripts/run-node-suite.sh fails when
# the node or one of its processes is missing, or fewer node tests ran than e2e/node holds, and
# scripts/check-node-death.sh shows that a dead kubelet fails it), then the suite under ASan +
# UBSan (clang, one build with the fuzzers) and the server's tests (and `shmguard-webhook`'s) under
# TSan, both built beside the end-to-end suites, then each fuzzer for 5 s, and last the
# Dockerfile's own build (scripts/build-images.sh --dockerfile-check), made from the start on
# whatever CPU nothing else wants.
# It ends with every test that was skipped, and why (scripts/list-skips.py).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
export PATH=/usr/local/go/bin:$PATH
# The node's images take minutes, much of it waiting on Debian's archive: built beside the rest.
images_log=$(mktemp)
# Every suite's log, for the list of skipped tests at the end.
logs=$(mktemp -d)
# With ../shared beside the checkout (or the corpus and CRDs pointed at), a test that reads it and
# would skip fails instead (SHMGUARD_REQUIRE_SHARED): what that data shows must be seen.
if [[ -d ${SHMGUARD_CORPUS_DIR:-../shared/testdata} && -d ${SHMGUARD_CRD_DIR:-../shared/crds} ]]; then
  export SHMGUARD_REQUIRE_SHARED=1
fi
# `--unit`: format, layers, build and CTest only (the inner loop), nothing started beside them.
unit=false
[[ ${1:-} == --unit ]] && unit=true
images_pid= tools_pid= check_pid=
if ! $unit; then
  # All but shmguard's own images, which the node suite builds from this run's programs. At the
  # lowest priority: nothing waits on them before the node suite, while the product's build and
  # the Go tools are the critical path.
  nice -n 19 env SHMGUARD_IMAGES_BASES=1 ./scripts/build-images.sh >"$images_log" 2>&1 &
  images_pid=$!
  # The Dockerfile's own build, when it or the build files changed: a second compile of the
  # product that nothing waits on but the end, so it runs under SCHED_IDLE, on the CPU nothing
  # else wants (on a new machine, beside the product's build at normal priority, it made the
  # build phase 1,716 s: docs/testing.md).
  check_log=$(mktemp)
  chrt --idle 0 ./scripts/build-images.sh --dockerfile-check >"$check_log" 2>&1 &
  check_pid=$!
fi
# The cluster's Go tools, likewise from the start: on a new machine they are most of the wait,
# much of it on the module proxy. Niced, so the product's build ahead of them keeps the CPUs.
# First what the control-plane suite runs; the node's components after, beside that suite.
tools_log=$(mktemp) tools_cp_status=$(mktemp)
if ! $unit; then
  (
    status=0
    nice -n 10 ./scripts/build-tools.sh --control-plane >/dev/null || status=$?
    echo "$status" >"$tools_cp_status"
    ((status == 0)) && nice -n 10 ./scripts/build-tools.sh >/dev/null
  ) 2>"$tools_log" &
  tools_pid=$!
fi
# wait_for_status FILE PID: until the job PID has written its status to FILE; returns it.
wait_for_status() {
  until [[ -s $1 ]]; do
    kill -0 "$2" 2>/dev/null || { [[ -s $1 ]] || return 1; }
    sleep 1
  done
  return "$(cat "$1")"
}
# Each phase's wall seconds, printed at the end, pass or fail (docs/testing.md keeps them).
phases=()
phase() {
  local name=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  phases+=("$(printf '%-28s %6d s  %s' "$name" $((SECONDS - start)) "$([[ $status == 0 ]] && echo ok || echo "failed ($status)")")")
  return "$status"
}
report() {
  printf '\ntest.sh phases (wall seconds):\n'
  printf '  %s\n' "${phases[@]}"
  printf '  %-28s %6d s\n' total "$SECONDS"
}
# A background job and everything it started (a build's compilers, a tool's go build).
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  report
  for pid in ${tools_pid:-} ${images_pid:-} ${check_pid:-} ${sanitizers_pid:-}; do kill_tree "$pid"; done
  ./scripts/control-plane.sh down
}
trap cleanup EXIT
# A phase of several commands stops at the first that fails (set -e does not hold inside it).
checks() {
  ./scripts/format.sh --check || return
  ./scripts/check-layers.sh || return
  ./scripts/check-docs.sh || return
  (cd e2e && test -z "$(gofmt -l .)") || { echo "e2e: gofmt -l found problems" >&2; return 1; }
}
phase "format, layers, docs" checks
# No debug info here: it is a third of the compile time, and CI only needs the verdicts.
phase "build" env BUILD_DIR="${BUILD_DIR:-build}" ./scripts/build.sh -DSHMGUARD_WERROR=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG"
phase "ctest" ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2 --output-junit "$logs/ctest.xml"
if $unit; then exit 0; fi

# The sanitizer builds, beside the suites that mostly wait on a control plane, a node and pods:
# at the lowest priority, so that those suites' timing bounds keep the CPUs they need.
# AddressSanitizer + UndefinedBehaviorSanitizer (clang, with the libFuzzer targets in the same
# build: scripts/fuzz.sh runs them from it), then ThreadSanitizer on the server's tests and
# `shmguard-webhook`'s (GCC). Warnings are the plain build's business: GCC reports false
# -Wmaybe-uninitialized in libstdc++ under the sanitizers. -O0 with line tables only (-g1)
# compiles in half the time of -O1 while reports still name files and lines.
sanitize_flags=(-DSHMGUARD_WERROR=OFF -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1")
sanitizer_builds() {
  CC=clang CXX=clang++ BUILD_DIR=build-asan ./scripts/build.sh -DSHMGUARD_FUZZ=ON "${sanitize_flags[@]}" || return
  BUILD_DIR=build-tsan ./scripts/build.sh -DSHMGUARD_SANITIZE=thread \
    "-DSHMGUARD_TESTS=http/*.cc;kube/*.cc;server/*.cc;agent/*.cc;cli/webhook/webhook_command_test.cc" "${sanitize_flags[@]}"
}
sanitizers_log=$(mktemp)
(renice -n 19 "$BASHPID" >/dev/null && sanitizer_builds) >"$sanitizers_log" 2>&1 &
sanitizers_pid=$!

# `shmguard report`'s page in a real browser: no request, no console error, filter, sort, numbers.
phase "report (chromium)" ./scripts/check-report.sh
# The control plane's tools, started at the beginning: what is left of their build.
phase "go tools (control plane)" wait_for_status "$tools_cp_status" "$tools_pid" || { cat "$tools_log" >&2; exit 1; }
# go vet over the e2e module: after those tools, whose build has fetched most of the modules it
# reads (on a new machine, vetting first spent 511 s fetching them on the critical path); what
# it compiles, the suite's build reuses.
phase "go vet" bash -c 'cd e2e && go vet ./...'

# The end-to-end suite, in front of a real kube-apiserver: a control plane of its own (stopped
# and removed on exit, whatever happens), with the binary just built. Verbose into the log
# (skips and their reasons), the outcomes on the console; the node suite runs below, on the node.
export SHMGUARD_CONTROL_PLANE_DIR=${TMPDIR:-/tmp}/shmguard-e2e-$$
control_plane_suite() {
  SHMGUARD_BINARY="$PWD/${BUILD_DIR:-build}/shmguard" ./scripts/control-plane.sh up >/dev/null || return
  local status=0
  (cd e2e && go test -count=1 -timeout 20m -v $(go list ./... | grep -v '/node$')) >"$logs/e2e.log" 2>&1 || status=$?
  grep -a -E '^(--- FAIL|FAIL|ok|panic)|^    .*_test.go' "$logs/e2e.log" | grep -a -v -- '--- PASS' || true
  ((status == 0)) || { echo "the end-to-end suite failed (its log: $logs/e2e.log)" >&2; return 1; }
  ./scripts/control-plane.sh down
}
phase "control-plane e2e" control_plane_suite

# The node's tools, built beside that suite.
phase "go tools (rest)" wait "$tools_pid" || { cat "$tools_log" >&2; exit 1; }
# The chart's alerts: promtool check rules on the rendered PrometheusRule, and their unit tests.
phase "alerts (promtool)" ./scripts/check-alerts.sh

# The node suite: pods that run, on a node in a network namespace of its own, with shmguard
# installed by helm from the image its Dockerfile builds (down on exit, mounts and all).
phase "images (rest)" wait "$images_pid" || { cat "$images_log" >&2; exit 1; }
export SHMGUARD_CONTROL_PLANE_DIR=${TMPDIR:-/tmp}/shmguard-e2e-node-$$
node_suite() {
  SHMGUARD_BINARY="$PWD/${BUILD_DIR:-build}/shmguard" ./scripts/control-plane.sh up --node >/dev/null || return
  ./scripts/run-node-suite.sh "$logs/node.log" || return
  ./scripts/check-node-death.sh || return
  ./scripts/control-plane.sh down
}
phase "node e2e" node_suite

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer, and the server's
# tests and `shmguard-webhook`'s under ThreadSanitizer; any report fails (but for the false ones
# of libraries built without TSan, tests/tsan.supp, each said why).
phase "sanitizer builds (rest)" wait "$sanitizers_pid" || { grep -E -B2 -A8 'error|FAILED' "$sanitizers_log" | head -80 >&2; exit 1; }
phase "asan+ubsan ctest" env ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2 --output-junit "$logs/ctest-asan.xml"
phase "tsan ctest" env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp \
  ctest --test-dir build-tsan --output-on-failure -j2 --output-junit "$logs/ctest-tsan.xml"

# Every libFuzzer target for at most 5 s (clang, ASan + UBSan: the build above; scripts/fuzz.sh),
# so that an input that crashes one within that time fails CI; their regression inputs already
# ran in both CTest runs (fuzz replay). The seed is fixed, so that a failure here reproduces with
# the same command.
phase "fuzz 5 s each" env SHMGUARD_FUZZ_BUILT=build-asan SHMGUARD_FUZZ_SEED=1 ./scripts/fuzz.sh 10000000 5

# The Dockerfile's own build, started at the beginning: what is left of it.
phase "dockerfile check (rest)" wait "$check_pid" || { tail -40 "$check_log" >&2; exit 1; }

./scripts/list-skips.py "Skipped tests" "$logs"/*
