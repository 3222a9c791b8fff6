#!/usr/bin/env bash
# Instructions per admission decision, counted by callgrind — the measure to compare two builds
# with on a noisy machine, where wall-clock rates move ±25 % between runs of one binary.
#   bench/instructions.sh            -> "pod-10k: 325711 instructions per HandleAdmission" ...
#                                       "pod-10k: 370983 instructions per request, whole server"
# Builds the Release binaries like bench/run.sh, generates the bodies, and runs
# shmguard_handler_bench (bench/handler.cc) under callgrind for each body; then `shmguard serve`
# itself under callgrind, fed by bench/open_loop at 100 requests/s for 2 s and for 6 s: the
# difference over the difference in requests is one request's user-space instructions, TLS,
# HTTP, logging and metrics included (the kernel's share is not counted).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/prepare.sh
bench_prepare valgrind
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

./scripts/dev-cert.sh "$out" >/dev/null
serve_under_callgrind() {  # BODY SECONDS -> "instructions requests"
  valgrind --tool=callgrind --callgrind-out-file="$out/serve.cg" build-bench/shmguard serve \
    --tls-cert-file "$out/tls.crt" --tls-key-file "$out/tls.key" --port 18443 --metrics-port 18080 \
    --bind-address 127.0.0.1 --log-format json 2>"$out/valgrind.log" >/dev/null &
  local pid=$!
  wait_ready 18080 30 || { kill "$pid"; return 1; }
  local sent
  sent=$(build-bench/open_loop 18443 /mutate "$data/$1.json" 100 "$2" 8 | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/valgrind.log") $sent"
}
for body in pod-10k jobset pod-200k; do
  read -r short_ir short_n <<< "$(serve_under_callgrind "$body" 2)"
  read -r long_ir long_n <<< "$(serve_under_callgrind "$body" 6)"
  echo "$body: $(( (long_ir - short_ir) / (long_n - short_n) )) instructions per request, whole server"
done
