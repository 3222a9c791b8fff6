#!/usr/bin/env bash
# Configures and builds shmguard into ${BUILD_DIR:-build} (extra CMake flags: $@).
# With ccache on the PATH (scripts/install-deps.sh installs it), every compile goes through it,
# its cache outside the tree (${SHMGUARD_CCACHE_DIR:-~/.cache/shmguard-ccache}): a second run,
# or a clone elsewhere, compiles only what changed. Paths are taken relative to the checkout, so
# clones in different directories share the cache. Precompiled headers are then off: GCC's are
# not the same bytes from one build to the next, and ccache keys every file that uses one by its
# bytes, so with them a new build directory missed on 776 of 897 compiles.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${SHMGUARD_CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-ccache}
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${launcher[@]}" "$@"
cmake --build "$build" -j"$(nproc)"
