#!/usr/bin/env bash
# What a parse that skipped the fields the decision never reads could save at most, counted by
# callgrind: each review as sent, then the same review with request.object's
# metadata.managedFields and status taken out of the text (and request.oldObject's), both
# written compactly. The second is the bound: a parse that skipped those fields would still
# read their bytes (to find where they end, and to refuse invalid JSON in them), so it saves
# less than their absence does.
#   bench/parse-bound.sh
# Per HandleAdmission (bench/load/handler.cc, callgrind --toggle-collect on it): simdjson's stage 1
# (every byte, SIMD), stage 2 (the tape) and the whole call.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/prepare.sh
bench_prepare valgrind
bench_bodies
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

python3 - "$data" "$out" <<'EOF'
import json, sys
data, out = sys.argv[1:]
for body in ("api-pod", "pod-10k", "pod-200k"):
    review = json.load(open(f"{data}/{body}.json"))
    with open(f"{out}/{body}.sent.json", "w") as f:
        json.dump(review, f, separators=(",", ":"))
    for side in ("object", "oldObject"):
        obj = review["request"].get(side) or {}
        obj.get("metadata", {}).pop("managedFields", None)
        obj.pop("status", None)
    with open(f"{out}/{body}.skipped.json", "w") as f:
        json.dump(review, f, separators=(",", ":"))
EOF

count() {  # BODY_FILE ITERATIONS -> "stage1 stage2 handler" per call
  valgrind --tool=callgrind --callgrind-out-file="$out/h.cg" --toggle-collect='shmguard::server::HandleAdmission*' \
    build-bench/shmguard_handler_bench "$1" --iterations "$2" >/dev/null 2>&1
  callgrind_annotate "$out/h.cg" | awk -v n="$2" '
    /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
    /dom_parser_implementation::stage1/ { gsub(",", "", $1); s1 = $1 }
    /dom_parser_implementation::stage2/ { gsub(",", "", $1); s2 = $1 }
    END { printf "%d %d %d\n", s1 / n, s2 / n, total / n }'
}

echo "| body | bytes sent / without | stage 1 | stage 2 | HandleAdmission | saved by their absence |"
echo "|---|---|---|---|---|---|"
for body in api-pod pod-10k pod-200k; do
  iterations=300
  [[ $body == pod-200k ]] && iterations=40
  read -r a1 a2 at < <(count "$out/$body.sent.json" "$iterations")
  read -r b1 b2 bt < <(count "$out/$body.skipped.json" "$iterations")
  echo "| $body | $(wc -c <"$out/$body.sent.json") / $(wc -c <"$out/$body.skipped.json") |" \
       "$a1 → $b1 | $a2 → $b2 | $at → $bt | stage 2: $((a2 - b2)), both stages: $((a1 + a2 - b1 - b2)) |"
done
