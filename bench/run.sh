#!/usr/bin/env bash
# One command, fresh Debian 12 machine (as root) -> the shmguard benchmark:
#   bench/run.sh [ROUNDS] [SECONDS]        (defaults: 3 rounds of 5 s per measurement)
#   BEFORE=REV bench/run.sh ...           also commit REV's `shmguard-webhook` (built in a worktree,
#                                         bench/prepare.sh), in the same rounds: before and after
# Builds a Release binary and the Go peer (bench/load/gopeer, from the Go toolchain), generates the
# request bodies and audit streams (bench/tools/make_bodies.py; the API server's own reviews are in
# bench/bodies), makes certificates, and runs three servers pinned to CPU 0 while wrk,
# bench/load/open_loop and bench/load/tls_load run pinned to CPU 1:
#   shmguard  `shmguard-webhook`, as deployed (JSON decision logs)
#   nginx     the ceiling: a fixed AdmissionReview over TLS
#   go        the peer: a webhook written with net/http and the Kubernetes API types
#   before    with BEFORE=REV: that commit's `shmguard-webhook`, flags as above
# Rounds are interleaved (shmguard, nginx, go, shmguard, ...) and medians reported, since the
# machine is shared and noisy; every ratio is printed beside nginx's own rate, since a slow
# host lifts ratios. Then TLS: 1.3 against 1.2, keep-alive and full handshakes, and mutual TLS.
# Results: bench/results/latest.md (and .csv); the files of bench/results/ were made from it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-5}
source bench/prepare.sh
bench_prepare wrk nginx-light time
bin=build-bench/shmguard
targets=(shmguard nginx go)
if [[ -n ${BEFORE:-} ]]; then
  before_dir=$(bench_build_rev "$BEFORE")
  targets+=(before)
fi
[[ -f $data/audit-100000.json ]] || python3 bench/tools/make_bodies.py "$data" --audit
bench_bodies
(cd bench/load/gopeer && PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=readonly go build -o ../../../build-bench/gopeer .)

results=bench/results
mkdir -p "$results"
work=$(mktemp -d)
csv=$results/latest.csv
echo "kind,target,body,connections,round,rps,p50_us,p99_us,errors" > "$csv"
cleanup() {
  for pid in ${nginx_pid:-} ${shmguard_pid:-} ${go_pid:-} ${before_pid:-} ${tls_pid:-}; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
./scripts/dev-cert.sh "$work"
sed "s|@WORK@|$work|g; s|@PORT@|19443|g" bench/load/nginx.conf.in > "$work/nginx.conf"
taskset -c 0 nginx -c "$work/nginx.conf" &
nginx_pid=$!
webhook_in build-bench
taskset -c 0 "${webhook[@]}" --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" --port 18443 \
  --metrics-port 18080 --bind-address 127.0.0.1 --log-format json 2>"$work/server.log" &
shmguard_pid=$!
taskset -c 0 build-bench/gopeer --cert "$work/tls.crt" --key "$work/tls.key" --addr 127.0.0.1:20443 &
go_pid=$!
wait_ready 18080
if [[ -n ${BEFORE:-} ]]; then
  webhook_in "$before_dir"
  taskset -c 0 "${webhook[@]}" --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" --port 21443 \
    --metrics-port 18082 --bind-address 127.0.0.1 --log-format json 2>"$work/before.log" &
  before_pid=$!
  wait_ready 18082
fi
sleep 1

declare -A port=([shmguard]=18443 [nginx]=19443 [go]=20443 [before]=21443)
for round in $(seq "$rounds"); do
  for body in pod-10k pod-200k jobset api-pod api-jobset; do
    conn_counts="1 8 32"
    [[ $body == api-* ]] && conn_counts=8
    for conns in $conn_counts; do
      for target in "${targets[@]}"; do
        line=$(BODY_FILE=$data/$body.json taskset -c 1 wrk -t1 -c"$conns" -d"${seconds}s" -s bench/load/post.lua \
               "https://127.0.0.1:${port[$target]}/mutate" | grep RESULT)
        eval "${line#RESULT }"
        echo "closed,$target,$body,$conns,$round,$rps,$p50_us,$p99_us,$errors" >> "$csv"
        echo "round $round $target $body c=$conns: $line"
      done
    done
  done
  for target in "${targets[@]}"; do
    line=$(taskset -c 1 build-bench/open_loop "${port[$target]}" /mutate "$data/pod-10k.json" 2000 $((seconds * 2)) 8)
    eval "${line#RESULT }"
    echo "open,$target,pod-10k,8,$round,$rate,$p50_us,$p99_us,$errors" >> "$csv"
    echo "round $round $target open-loop 2000/s: $line"
  done
done
rss_kib=$(awk '/VmHWM/{print $2}' /proc/$shmguard_pid/status)
go_rss_kib=$(awk '/VmHWM/{print $2}' /proc/$go_pid/status)
before_rss_kib=0
if [[ -n ${BEFORE:-} ]]; then
  before_rss_kib=$(awk '/VmHWM/{print $2}' /proc/$before_pid/status)
  kill -TERM "$before_pid"; wait "$before_pid" || true; before_pid=
fi
kill -TERM "$shmguard_pid"; wait "$shmguard_pid" || true; shmguard_pid=
kill "$nginx_pid" "$go_pid"; wait "$nginx_pid" "$go_pid" 2>/dev/null || true; nginx_pid= go_pid=

# TLS: shmguard alone, one configuration at a time, driven by bench/load/tls_load (wrk can neither
# choose the protocol version nor show a client certificate): keep-alive requests and full
# handshakes (a new connection, no resumption, per request) at TLS 1.3 and 1.2, then with
# mutual TLS (a client certificate from the dev CA, CN kube-apiserver).
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/client.key" \
  -out "$work/client.csr" -subj /CN=kube-apiserver 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > "$work/client.ext"
openssl x509 -req -in "$work/client.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -days 2 \
  -extfile "$work/client.ext" -out "$work/client.crt" 2>/dev/null
tls_csv=$results/latest-tls.csv
echo "config,mode,round,rps,handshakes,errors" > "$tls_csv"
start_tls_server() {  # EXTRA FLAGS...
  taskset -c 0 build-bench/shmguard-webhook --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" --port 18444 \
    --metrics-port 18081 --bind-address 127.0.0.1 --log-format json "$@" 2>>"$work/tls-server.log" &
  tls_pid=$!
  wait_ready 18081
}
for round in $(seq "$rounds"); do
  for config in tls1.3 tls1.2 mtls1.3; do
    case $config in
      tls1.3) start_tls_server; client=() ;;
      tls1.2) start_tls_server --tls-min-version VersionTLS12; client=(--tls1.2) ;;
      mtls1.3) start_tls_server --client-ca-file "$work/ca.crt"; client=(--cert "$work/client.crt" --key "$work/client.key") ;;
    esac
    for mode in keep-alive handshake; do
      extra=()
      [[ $mode == handshake ]] && extra=(--new-connections)
      line=$(taskset -c 1 build-bench/tls_load 18444 /mutate "$data/pod-10k.json" "$seconds" 8 "${client[@]}" "${extra[@]}")
      eval "${line#RESULT }"
      echo "$config,$mode,$round,$rps,$handshakes,$errors" >> "$tls_csv"
      echo "round $round TLS $config $mode: $line"
    done
    kill -TERM "$tls_pid"; wait "$tls_pid" || true; tls_pid=
  done
done

audit_csv=$results/latest-audit.csv
echo "round,objects,format,jobs,bytes,seconds,peak_rss_kib" > "$audit_csv"
for round in $(seq "$rounds"); do  # rounds over all inputs, so that a noisy stretch hits one of each
  for n in 1000 10000 100000; do
    for fmt in yaml json; do
      for jobs in 1 "$(nproc)"; do
        f=$data/audit-$n.$fmt
        # The 100,000-object streams are 0.7-0.9 GB, above audit's default --max-file-bytes.
        t=$( { /usr/bin/time -f "%e %M" "$bin" audit -j "$jobs" --max-file-bytes $((4 << 30)) -o table "$f" \
               >/dev/null; } 2>&1 | tail -1)
        echo "$round,$n,$fmt,$jobs,$(stat -c %s "$f"),${t% *},${t#* }" >> "$audit_csv"
        echo "round $round audit $n $fmt -j $jobs: ${t% *} s, ${t#* } KiB"
      done
    done
  done
done
python3 bench/tools/report.py "$csv" "$audit_csv" "$tls_csv" "$rss_kib" "$go_rss_kib" "$before_rss_kib" "${BEFORE:-}" | tee "$results/latest.md"
