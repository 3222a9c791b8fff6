#!/usr/bin/env bash
# Prints the -ldflags that stamp a Kubernetes build with its release as hack/lib/version.sh
# does (so `kubectl version`, the API server's /version and Helm's kubeVersion checks see the
# release, not v0.0.0-master), for the k8s.io/kubernetes release the Go module in DIR requires.
# scripts/build-tools.sh and scripts/version-matrix.sh build with them.
#   k8s-ldflags.sh DIR
set -euo pipefail
cd "${1:?usage: k8s-ldflags.sh DIR}"
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
[[ $version =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { echo "k8s-ldflags: k8s.io/kubernetes $version is not a release" >&2; exit 1; }
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
date=$(go mod download -json "k8s.io/kubernetes@$version" |
  python3 -c 'import json,sys; print(json.load(open(json.load(sys.stdin)["Info"]))["Time"])')
flags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done
echo "$flags"
