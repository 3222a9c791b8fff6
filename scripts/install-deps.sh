#!/usr/bin/env bash
# Installs shmguard's dependencies from Debian 12's archive (run as root).
#   install-deps.sh          what README command (b) needs: the build, the tests, and the
#                            end-to-end suite's node
#   install-deps.sh --build  only what the build needs (the Dockerfile's build stage)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
build=(
  g++ cmake ninja-build pkg-config
  libcpp-httplib-dev libssl-dev libyaml-dev nlohmann-json3-dev libspdlog-dev libcli11-dev libsimdjson-dev libjemalloc-dev catch2
)
# The report's browser test (tests/report/browser_test.py) drives Debian's chromium through its
# chromedriver: no browser is downloaded.
tests=(openssl curl python3 python3-yaml python3-jsonpatch clang-format chromium chromium-driver python3-selenium)
# The ASan + UBSan build is clang's, with the libFuzzer targets in it (scripts/fuzz.sh); ccache
# keeps every build's objects outside the tree (scripts/build.sh), so a second run compiles only
# what changed.
tests+=(clang libclang-rt-14-dev ccache)
# The end-to-end suite's node (scripts/control-plane.sh up --node): runc's seccomp, the CNI
# plugins, the tools the kubelet, kube-proxy and the node's set-up call, and what builds the
# images (mmdebstrap makes the Debian base images, buildah builds the Dockerfiles).
node=(
  libseccomp-dev containernetworking-plugins iptables iproute2 conntrack util-linux mount
  mmdebstrap debian-archive-keyring buildah
)
case ${1:-} in
--build) packages=("${build[@]}") ;;
"") packages=("${build[@]}" "${tests[@]}" "${node[@]}") ;;
*) echo "usage: install-deps.sh [--build]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm installs the SARIF validator the end-to-end suite runs (e2e/tools/sarif); any Node with npm
# will do, Debian's only when there is none.
[[ ${1:-} == --build ]] || command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  # An install cut short earlier (a killed run) leaves dpkg refusing every other until it is done.
  dpkg --configure -a
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
