#!/usr/bin/env bash
# Fresh machine -> all tests: installs dependencies (Debian packages, and the npm packages of the
# CEL test), builds with warnings as errors, checks that the core includes no I/O library, and
# runs every Catch2 test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
npm ci --prefix tests/cel --no-audit --no-fund  # @bufbuild/cel, pinned in tests/cel/package-lock.json
if grep -rnE '#include *[<"](httplib|yaml|spdlog|openssl|CLI|simdjson)' include/shmguard src/core; then
  echo "the core (include/shmguard, src/core) must not include I/O libraries" >&2
  exit 1
fi
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh -DSHMGUARD_WERROR=ON
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2
