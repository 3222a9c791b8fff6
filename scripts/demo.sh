#!/usr/bin/env bash
# Fresh machine -> the main job on built-in defaults: install, build, size one job by hand with
# `shmguard plan`, and audit the bundled examples.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF >/dev/null
bin=build/shmguard

echo "== shmguard plan: 4 GPUs, 8 workers, 160Mi batches, 64Gi limit"
"$bin" plan --num-workers 8 --batch-bytes 160Mi --gpus 4 --memory-limit 64Gi

echo
echo "== shmguard audit examples/"
"$bin" audit examples/ || echo "(audit exit code $?: 1 = findings at or above --fail-on)"
