#!/usr/bin/env bash
# Instructions per admission decision, counted by callgrind — the measure to compare two builds
# with on a noisy machine, where wall-clock rates move ±25 % between runs of one binary.
#   bench/instructions.sh            -> "pod-10k: 325711 instructions per HandleAdmission" ...
# Builds the Release binaries like bench/run.sh, generates the bodies, and runs
# shmguard_handler_bench (bench/handler.cc) under callgrind for each body.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
dpkg-query -W -f='${Status}' valgrind 2>/dev/null | grep -q "install ok installed" ||
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends valgrind; }
BUILD_DIR=build-bench BUILD_TYPE=Release ./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF >/dev/null
data=build-bench/bench-data
python3 bench/make_bodies.py "$data" >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for body in pod-10k jobset pod-200k; do
  iterations=300
  [[ $body == pod-200k ]] && iterations=40
  valgrind --tool=callgrind --callgrind-out-file="$out/$body" \
    build-bench/shmguard_handler_bench "$data/$body.json" --iterations "$iterations" >/dev/null 2>&1
  # The bench calls HandleAdmission once per iteration (its stages are timed separately).
  total=$(callgrind_annotate --inclusive=yes "$out/$body" |
          awk '/shmguard::server::HandleAdmission\(/ && !found {gsub(",", "", $1); print $1; found = 1}')
  echo "$body: $((total / iterations)) instructions per HandleAdmission"
done
