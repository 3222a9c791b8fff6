# Sourced by the benchmark scripts (bench/run.sh, floor.sh, instructions.sh, parse-bound.sh,
# scripts/soak.sh): the steps each of them starts with. Run from the repository's top directory.

# bench_prepare [PACKAGE...]: installs the build's Debian packages and PACKAGE... when missing,
# builds the Release binaries into build-bench/, and the load generators bench/load/open_loop.cc and
# bench/load/tls_load.cc into build-bench/.
bench_prepare() {
  ./scripts/install-deps.sh
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  fi
  BUILD_DIR=build-bench BUILD_TYPE=Release ./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF -DSHMGUARD_BUILD_BENCH=ON >/dev/null
  g++ -O2 -std=c++20 -o build-bench/open_loop bench/load/open_loop.cc -lssl -lcrypto -pthread
  g++ -O2 -std=c++20 -o build-bench/tls_load bench/load/tls_load.cc -lssl -lcrypto -pthread
}

# Where the request bodies and audit streams are: $data/pod-10k.json and the like.
data=build-bench/bench-data

# bench_bodies: the request bodies, always fresh, in $data: the generated ones
# (bench/tools/make_bodies.py) and the API server's own reviews (bench/bodies, captured from the
# end-to-end control plane by e2e/cmd/capture-reviews) as api-pod and api-jobset.
bench_bodies() {
  python3 bench/tools/make_bodies.py "$data" >/dev/null
  cp bench/bodies/pod-jobset.json "$data/api-pod.json"
  cp bench/bodies/jobset.json "$data/api-jobset.json"
}

# bench_build_rev REV: builds commit REV's Release binaries in a worktree outside the tree
# (${TMPDIR:-/tmp}/shmguard-bench-REV, kept for the next run) and prints their directory.
bench_build_rev() {
  local wt=${TMPDIR:-/tmp}/shmguard-bench-$1
  [[ -d $wt ]] || git worktree add -f "$wt" "$1" >/dev/null
  (cd "$wt" && BUILD_DIR=build-bench BUILD_TYPE=Release ./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF \
    -DSHMGUARD_BUILD_BENCH=ON >/dev/null)
  echo "$wt/build-bench"
}

# webhook_in DIR: sets the array `webhook` to the command that runs the webhook of the build in
# DIR: DIR/shmguard-webhook, or `DIR/shmguard serve` for a commit built before the webhook was a
# program of its own (BEFORE=REV).
webhook_in() {
  if [[ -x $1/shmguard-webhook ]]; then webhook=("$1/shmguard-webhook"); else webhook=("$1/shmguard" serve); fi
}

# wait_ready METRICS_PORT [SECONDS]: waits until the webhook answers /readyz there (default
# 10 s, longer under valgrind); fails, saying so, when it does not.
wait_ready() {
  local tries=$(( ${2:-10} * 10 ))
  for _ in $(seq "$tries"); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "the webhook did not become ready on port $1 within ${2:-10} s" >&2
  return 1
}
