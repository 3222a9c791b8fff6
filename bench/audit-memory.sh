#!/usr/bin/env bash
# Peak memory of `shmguard audit` over a large YAML stream, for every output format, against the
# file's size (the goal: at most 2x). Uses ${SHMGUARD_BINARY:-build/shmguard} (built by
# scripts/build.sh when missing) and GNU time.
#   bench/audit-memory.sh [MB]          default 200
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mb=${1:-200}
bin=${SHMGUARD_BINARY:-$root/build/shmguard}
[[ -x $bin ]] || (cd "$root" && ./scripts/build.sh >/dev/null)
command -v /usr/bin/time >/dev/null || apt-get install -y --no-install-recommends time >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/tools/make_bodies.py" "$work" --stream-mb "$mb"
file=$work/audit-${mb}mb.yaml
size=$(stat -c %s "$file")
echo "| -o | peak RSS MiB | x the file ($((size / 1048576)) MiB) | seconds |"
echo "|---|---|---|---|"
for o in table json yaml patched sarif junit github policyreport; do
  /usr/bin/time -f "%M %e" -o "$work/t" "$bin" audit -o "$o" -j 2 "$file" >/dev/null 2>&1 || true
  read -r kib secs <"$work/t"
  awk -v o="$o" -v k="$kib" -v s="$size" -v t="$secs" 'BEGIN { printf "| %s | %.0f | %.2f | %s |\n", o, k / 1024, k * 1024 / s, t }'
done
