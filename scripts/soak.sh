#!/usr/bin/env bash
# Soak: `shmguard-webhook` under mixed valid and invalid traffic on loopback for a bounded time.
#   scripts/soak.sh [SECONDS]      default 600 (10 minutes)
# Valid 10 KB Pod reviews at 400 req/s over 4 connections, and invalid bodies (truncated JSON,
# 100,000 nested brackets) at 100 req/s each, all at a fixed rate (bench/load/open_loop.cc). Passes
# when no valid request gets an error answer, every invalid one gets a 4xx, and the server's
# RSS at the end is within 5% of its RSS after the first 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
source bench/prepare.sh
bench_prepare
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
./scripts/dev-cert.sh "$work"
python3 bench/tools/make_bodies.py "$work/bodies" >/dev/null
head -c 5000 "$work/bodies/pod-10k.json" > "$work/truncated.json"
python3 -c "print('[' * 100000)" > "$work/nested.json"
build-bench/shmguard-webhook --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" --port 18543 \
  --metrics-port 18180 --bind-address 127.0.0.1 --log-format json 2>"$work/server.log" &
server=$!
wait_ready 18180

rss() { awk '/VmRSS/{print $2}' /proc/$server/status; }
build-bench/open_loop 18543 /mutate "$work/bodies/pod-10k.json" 400 "$seconds" 4 > "$work/valid.out" &
valid=$!
build-bench/open_loop 18543 /validate "$work/truncated.json" 100 "$seconds" 2 > "$work/truncated.out" &
truncated=$!
build-bench/open_loop 18543 /mutate "$work/nested.json" 100 "$seconds" 2 > "$work/nested.out" &
nested=$!
sleep 30
baseline=$(rss)
echo "RSS after 30 s: $baseline KiB"
peak=$baseline
for _ in $(seq $(( (seconds - 30) / 10 ))); do
  sleep 10
  now=$(rss); (( now > peak )) && peak=$now
done
wait $valid $truncated $nested
final=$(rss)
echo "valid:     $(cat "$work/valid.out")"
echo "truncated: $(cat "$work/truncated.out")   (every answer should be an error: 400)"
echo "nested:    $(cat "$work/nested.out")   (every answer should be an error: 400)"
curl -s http://127.0.0.1:18180/metrics | grep -E '^shmguard_(admission_requests_total|http_errors_total)'
growth=$(python3 -c "print(round(100.0 * ($final - $baseline) / $baseline, 2))")
echo "RSS: baseline $baseline KiB, peak $peak KiB, final $final KiB, growth ${growth}%"
valid_errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' "$work/valid.out")
bad_ok=$(( $(sed -n 's/.* sent=\([0-9]*\).*/\1/p' "$work/truncated.out") + $(sed -n 's/.* sent=\([0-9]*\).*/\1/p' "$work/nested.out") ))
if (( valid_errors == 0 && bad_ok == 0 )) && python3 -c "import sys; sys.exit(0 if $growth < 5 else 1)"; then
  echo "soak: PASS"
else
  echo "soak: FAIL (valid errors $valid_errors, invalid answered 200: $bad_ok, RSS growth ${growth}%)"
  exit 1
fi
