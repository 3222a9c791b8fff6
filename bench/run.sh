#!/usr/bin/env bash
# One command, fresh Debian 12 machine (as root) -> the shmguard benchmark:
#   bench/run.sh [ROUNDS] [SECONDS]        (defaults: 3 rounds of 5 s per measurement)
# Builds a Release binary, generates the request bodies and audit streams (bench/make_bodies.py),
# makes certificates, and runs shmguard and the nginx "ceiling" (a fixed AdmissionReview over
# TLS) pinned to CPU 0 while wrk / bench/open_loop run pinned to CPU 1. Rounds are interleaved
# (shmguard, nginx, shmguard, ...) and medians reported, since the machine is shared and noisy.
# Results: bench/results/latest.md (and .csv); the table in bench/README.md comes from it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-5}
source bench/prepare.sh
bench_prepare wrk nginx-light time
bin=build-bench/shmguard
data=build-bench/bench-data
[[ -f $data/audit-100000.json ]] || python3 bench/make_bodies.py "$data" --audit
python3 bench/make_bodies.py "$data"  # the request bodies, always fresh

results=bench/results
mkdir -p "$results"
work=$(mktemp -d)
csv=$results/latest.csv
echo "kind,target,body,connections,round,rps,p50_us,p99_us,errors" > "$csv"
cleanup() {
  [[ -n ${nginx_pid:-} ]] && kill "$nginx_pid" 2>/dev/null || true
  [[ -n ${shmguard_pid:-} ]] && kill "$shmguard_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
./scripts/dev-cert.sh "$work"
sed "s|@WORK@|$work|g; s|@PORT@|19443|g" bench/nginx.conf.in > "$work/nginx.conf"
taskset -c 0 nginx -c "$work/nginx.conf" &
nginx_pid=$!
taskset -c 0 "$bin" serve --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" --port 18443 \
  --metrics-port 18080 --bind-address 127.0.0.1 --log-format json 2>"$work/server.log" &
shmguard_pid=$!
wait_ready 18080
sleep 1

declare -A port=([shmguard]=18443 [nginx]=19443)
for round in $(seq "$rounds"); do
  for body in pod-10k pod-200k jobset; do
    for conns in 1 8 32; do
      for target in shmguard nginx; do
        line=$(BODY_FILE=$data/$body.json taskset -c 1 wrk -t1 -c"$conns" -d"${seconds}s" -s bench/post.lua \
               "https://127.0.0.1:${port[$target]}/mutate" | grep RESULT)
        eval "${line#RESULT }"
        echo "closed,$target,$body,$conns,$round,$rps,$p50_us,$p99_us,$errors" >> "$csv"
        echo "round $round $target $body c=$conns: $line"
      done
    done
  done
  for target in shmguard nginx; do
    line=$(taskset -c 1 build-bench/open_loop "${port[$target]}" /mutate "$data/pod-10k.json" 2000 $((seconds * 2)) 8)
    eval "${line#RESULT }"
    echo "open,$target,pod-10k,8,$round,$rate,$p50_us,$p99_us,$errors" >> "$csv"
    echo "round $round $target open-loop 2000/s: $line"
  done
done
rss_kib=$(awk '/VmHWM/{print $2}' /proc/$shmguard_pid/status)
kill -TERM "$shmguard_pid"; wait "$shmguard_pid" || true; shmguard_pid=
kill "$nginx_pid"; wait "$nginx_pid" 2>/dev/null || true; nginx_pid=

audit_csv=$results/latest-audit.csv
echo "round,objects,format,jobs,bytes,seconds,peak_rss_kib" > "$audit_csv"
for round in $(seq "$rounds"); do  # rounds over all inputs, so that a noisy stretch hits one of each
  for n in 1000 10000 100000; do
    for fmt in yaml json; do
      for jobs in 1 "$(nproc)"; do
        f=$data/audit-$n.$fmt
        t=$( { /usr/bin/time -f "%e %M" "$bin" audit -j "$jobs" -o table "$f" >/dev/null; } 2>&1 | tail -1)
        echo "$round,$n,$fmt,$jobs,$(stat -c %s "$f"),${t% *},${t#* }" >> "$audit_csv"
        echo "round $round audit $n $fmt -j $jobs: ${t% *} s, ${t#* } KiB"
      done
    done
  done
done
python3 bench/report.py "$csv" "$audit_csv" "$rss_kib" | tee "$results/latest.md"
