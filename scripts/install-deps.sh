#!/usr/bin/env bash
# Installs shmguard's build, test and demo dependencies from Debian 12's archive (run as root).
# The same list as the Dockerfile's build stage and README.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
packages=(
  g++ cmake ninja-build pkg-config
  libcpp-httplib-dev libssl-dev libyaml-dev nlohmann-json3-dev libspdlog-dev libcli11-dev libsimdjson-dev libjemalloc-dev catch2
  openssl curl python3 python3-yaml python3-jsonpatch clang-format
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm installs the SARIF validator the end-to-end suite runs (e2e/tools/sarif); any Node with npm
# will do, Debian's only when there is none.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
