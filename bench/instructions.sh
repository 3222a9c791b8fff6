#!/usr/bin/env bash
# Instructions per admission, counted by callgrind — the measure to compare builds with on a
# noisy machine, where wall-clock rates move ±25 % between runs of one binary.
#   bench/instructions.sh [REV...]
# For this tree's Release build and for each REV (a commit, built in a worktree outside the
# tree, ${TMPDIR:-/tmp}/shmguard-bench-REV), and for each body — the generated pod-10k, jobset
# and pod-200k (bench/tools/make_bodies.py) and the API server's own api-pod and api-jobset
# (bench/bodies, captured by e2e/cmd/capture-reviews):
#   1. instructions per HandleAdmission (bench/load/handler.cc under callgrind): the decision alone;
#   2. instructions per whole request through `shmguard-webhook` under callgrind, fed by
#      bench/load/open_loop at 100 requests/s over 8 keep-alive TLS connections for 2 s and for 6 s:
#      the difference over the difference in requests is one request, split by stage
#      (bench/tools/stages.py): TLS read, HTTP head, body framing, JSON, decision, patch, response
#      build, TLS write, log and metrics, and the rest (epoll, buffers, the event loop).
# User-space instructions only: the kernel's share (syscalls, loopback) is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/prepare.sh
bench_prepare valgrind
bench_bodies
bodies=(pod-10k jobset pod-200k api-pod api-jobset)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The builds to measure: this tree, then each REV.
names=(tree)
dirs=("$PWD/build-bench")
for rev in "$@"; do
  names+=("$rev")
  dirs+=("$(bench_build_rev "$rev")")
done

echo "| build | body | per HandleAdmission | per request | TLS read | HTTP head | body framing | JSON | decision | patch | response | TLS write | log+metrics | rest |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
./scripts/dev-cert.sh "$out" >/dev/null
serve_under_callgrind() {  # BUILD_DIR BODY SECONDS PROFILE -> requests sent
  webhook_in "$1"
  valgrind --tool=callgrind --callgrind-out-file="$4" "${webhook[@]}" \
    --tls-cert-file "$out/tls.crt" --tls-key-file "$out/tls.key" --port 18443 --metrics-port 18080 \
    --bind-address 127.0.0.1 --log-format json 2>"$out/valgrind.log" >/dev/null &
  local pid=$!
  wait_ready 18080 30 || { kill "$pid"; return 1; }
  local sent
  sent=$(build-bench/open_loop 18443 /mutate "$data/$2.json" 100 "$3" 8 | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$sent"
}
for i in "${!names[@]}"; do
  dir=${dirs[$i]}
  for body in "${bodies[@]}"; do
    iterations=300
    [[ $body == pod-200k ]] && iterations=40
    valgrind --tool=callgrind --callgrind-out-file="$out/handler.cg" \
      "$dir/shmguard_handler_bench" "$data/$body.json" --iterations "$iterations" >/dev/null 2>&1
    handler=$(callgrind_annotate --inclusive=yes "$out/handler.cg" |
              awk '/shmguard::server::HandleAdmission\(/ && !found {gsub(",", "", $1); print $1; found = 1}')
    short_n=$(serve_under_callgrind "$dir" "$body" 2 "$out/short.cg")
    long_n=$(serve_under_callgrind "$dir" "$body" 6 "$out/long.cg")
    stages=$(python3 bench/tools/stages.py "$out/short.cg" "$out/long.cg" "$short_n" "$long_n")
    declare -A s=()
    for kv in $stages; do s[${kv%%=*}]=${kv#*=}; done
    rest=${s[total]}
    for k in tls_read http_head body_framing json decision patch response tls_write log_metrics; do
      [[ ${s[$k]} == - ]] || rest=$((rest - s[$k]))
    done
    echo "| ${names[$i]} | $body | $((handler / iterations)) | ${s[total]} | ${s[tls_read]} | ${s[http_head]} |" \
         "${s[body_framing]} | ${s[json]} | ${s[decision]} | ${s[patch]} | ${s[response]} | ${s[tls_write]} |" \
         "${s[log_metrics]} | $rest |"
    unset s
  done
done
