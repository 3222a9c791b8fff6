#!/usr/bin/env bash
# Where a request's time goes, against the nginx ceiling: six servers pinned to CPU 0, driven
# in turn by wrk on CPU 1 with the same body and connections, in interleaved rounds:
#   nginx      the ceiling (bench/load/nginx.conf.in: a fixed AdmissionReview over TLS)
#   constant   shmguard's HTTPS transport answering nginx's fixed body (bench/load/floor_server.cc)
#   parse      the same, after parsing the body (simdjson, viewed in place as the server does)
#   decide     the same, answering with HandleAdmission: parse, decision and response
#   shmguard   `shmguard-webhook`: the webhook, with its routes, log line and metrics
#   bench/floor.sh [ROUNDS] [SECONDS] [CONNECTIONS]   (defaults: 5 rounds of 5 s, 8 connections)
#   BODIES="pod-10k jobset" bench/floor.sh            (default: pod-10k)
# Prints each server's median req/s and its ratio to nginx's median; the differences between
# the rows are what parsing, deciding, and logging and counting cost.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
seconds=${2:-5}
conns=${3:-8}
source bench/prepare.sh
bench_prepare wrk nginx-light
bench_bodies

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
./scripts/dev-cert.sh "$work" >/dev/null
sed "s|@WORK@|$work|g; s|@PORT@|19443|g" bench/load/nginx.conf.in > "$work/nginx.conf"
printf '%s' "$(sed -n "s/^ *return 200 '\(.*\)';$/\1/p" bench/load/nginx.conf.in)" > "$work/fixed.json"  # nginx's bytes
taskset -c 0 nginx -c "$work/nginx.conf" & pids+=($!)
taskset -c 0 build-bench/shmguard_floor_server "$work/tls.crt" "$work/tls.key" 18444 constant "$work/fixed.json" & pids+=($!)
taskset -c 0 build-bench/shmguard_floor_server "$work/tls.crt" "$work/tls.key" 18445 parse "$work/fixed.json" & pids+=($!)
taskset -c 0 build-bench/shmguard_floor_server "$work/tls.crt" "$work/tls.key" 18446 decide "$work/fixed.json" & pids+=($!)
taskset -c 0 build-bench/shmguard-webhook --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" \
  --port 18443 --metrics-port 18080 --bind-address 127.0.0.1 --log-format json 2>/dev/null & pids+=($!)
wait_ready 18080
sleep 1

declare -A port=([nginx]=19443 [constant]=18444 [parse]=18445 [decide]=18446 [shmguard]=18443)
targets=(nginx constant parse decide shmguard)
results=$work/results.csv
for round in $(seq "$rounds"); do
  for body in ${BODIES:-pod-10k}; do
    for target in "${targets[@]}"; do
      line=$(BODY_FILE=$data/$body.json taskset -c 1 wrk -t1 -c"$conns" -d"${seconds}s" -s bench/load/post.lua \
             "https://127.0.0.1:${port[$target]}/mutate" | grep RESULT)
      eval "${line#RESULT }"
      if [[ $errors != 0 ]]; then echo "$target answered $errors requests with errors" >&2; exit 1; fi
      echo "$body,$target,$rps" >> "$results"
      echo "round $round $body $target c=$conns: $rps req/s"
    done
  done
done
python3 - "$results" "${targets[@]}" <<'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
targets = sys.argv[2:]
for body in dict.fromkeys(r[0] for r in rows):
    measured = [t for t in targets if any(r[0] == body and r[1] == t for r in rows)]
    median = {t: statistics.median(float(r[2]) for r in rows if r[0] == body and r[1] == t) for t in measured}
    print(f"\n{body}: median req/s, and the ratio to nginx")
    for t in measured:
        print(f"  {t:<9} {median[t]:>9,.0f}  {100 * median[t] / median['nginx']:5.0f} %")
EOF
