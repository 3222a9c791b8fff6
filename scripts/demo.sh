#!/usr/bin/env bash
# Fresh machine -> the main job on built-in defaults: install, build, start `shmguard-webhook` on
# localhost with a generated dev certificate, push the bundled example workloads through
# /mutate and /validate with curl (printing each decision and patched object), stop it with
# SIGTERM, then audit the examples offline and size one job with `shmguard plan`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD_DIR=build-demo ./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF >/dev/null
bin=build-demo/shmguard
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

./scripts/dev-cert.sh "$work"
port=${SHMGUARD_PORT:-8443}
metrics_port=${SHMGUARD_METRICS_PORT:-8080}
"$bin-webhook" --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" \
  --port "$port" --metrics-port "$metrics_port" --bind-address 127.0.0.1 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$metrics_port/readyz" >/dev/null && break
  sleep 0.1
done
echo "== shmguard-webhook is up: https://localhost:$port (built-in policy: ml-*/train-* enforce, kube-* off, * warn)"

for manifest in examples/*.yaml; do
  grep -q '^kind:' "$manifest" || continue  # a Compose file is audited below, never admitted
  ./scripts/make-review.py "$manifest" > "$work/reviews"
  while IFS= read -r review; do
    printf '%s' "$review" > "$work/review.json"
    what=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["request"]; print(r["kind"]["kind"], r["namespace"] + "/" + r["name"])' "$work/review.json")
    # As the API server does: mutating webhooks first, then validation of the mutated object.
    echo
    echo "== POST /mutate  $what  ($manifest)"
    curl -sS --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
      --data-binary @"$work/review.json" "https://localhost:$port/mutate?timeout=10s" \
      | ./scripts/show-response.py "$work/review.json" "$work/mutated.json"
    echo "== POST /validate  $what  (the mutated object)"
    curl -sS --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
      --data-binary @"$work/mutated.json" "https://localhost:$port/validate?timeout=10s" \
      | ./scripts/show-response.py "$work/mutated.json"
  done < "$work/reviews"
done

echo
echo "== metrics (excerpt)"
curl -s "http://127.0.0.1:$metrics_port/metrics" | grep -E '^shmguard_(admission_requests_total|patches_total|denials_total)'
kill -TERM "$server"
wait "$server" && echo "== server stopped cleanly on SIGTERM (exit 0)"
echo "== server log"
cat "$work/server.log"

echo
echo "== shmguard audit examples/"
"$bin" audit examples/ || echo "(audit exit code $?: 1 = findings at or above --fail-on)"

echo
echo "== shmguard plan: 4 GPUs, 8 workers, 160Mi batches, 64Gi limit"
"$bin" plan --num-workers 8 --batch-bytes 160Mi --gpus 4 --memory-limit 64Gi
