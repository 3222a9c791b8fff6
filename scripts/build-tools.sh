#!/usr/bin/env bash
# Builds the cluster's components from their Go modules at the versions pinned in
# e2e/tools/*/go.mod — kube-apiserver, kube-controller-manager, kubectl, kubelet, kube-scheduler
# and kube-proxy (k8s.io/kubernetes), etcd (go.etcd.io/etcd/server/v3), helm (helm.sh/helm/v3),
# containerd with its runc shim and ctr (github.com/containerd/containerd/v2), runc with seccomp
# (github.com/opencontainers/runc), KWOK (sigs.k8s.io/kwok), the JobSet controller
# (sigs.k8s.io/jobset), Prometheus and promtool (github.com/prometheus/prometheus) — installs the
# SARIF Multitool (npm), and prints the directory that holds them all. With `--control-plane`,
# only what a control plane without a node runs (kube-apiserver, kube-controller-manager,
# kubectl, etcd, helm, the Multitool), into a directory of their own: scripts/test.sh starts its
# control-plane suite on those while the node's components build beside it (`scripts/test.sh`
# measured where the time goes: docs/testing.md). With `--peers`, only the admission engines
# bench/peers.sh sets beside shmguard: Kyverno's admission controller (github.com/kyverno/kyverno)
# and Gatekeeper's controller manager (github.com/open-policy-agent/gatekeeper/v3), each with the
# install manifest of its release beside it; CI does not build them. The cluster's components are built, not
# downloaded: modules come from the Go module proxy and are checked against go.sum; the
# Multitool, a .NET program, comes prebuilt from the npm registry, checked against
# e2e/tools/sarif/package-lock.json.
#
# Built binaries are cached outside the source tree, in ${SHMGUARD_TOOLS_CACHE:-~/.cache/shmguard-tools},
# one directory per module keyed by its version and a hash of its go.mod, go.sum, the Go
# version and this script, so a second run only checks that they are there. Go's own caches
# (GOMODCACHE, GOCACHE) make a rebuild after a version change incremental.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
control_plane_only=false peers=false
case ${1:-} in
--control-plane) control_plane_only=true ;;
--peers) peers=true ;;
"") ;;
*)
  echo "usage: $0 [--control-plane|--peers]" >&2
  exit 2
  ;;
esac
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
mkdir -p "$cache"
export PATH=/usr/local/go/bin:$PATH CGO_ENABLED=0 GOFLAGS=-mod=readonly
go_version=$(go env GOVERSION)
say() { printf 'build-tools: %s\n' "$*" >&2; }
# Runs share the cache: scripts/test.sh starts one in the background at its start, and the
# scripts that need the tools call it again. Each build takes a lock of its own, so a run waits
# only for what it needs that another run is still building.
# locked PATH: true unless PATH/.complete exists once PATH's lock is held (held until exit).
locked() {
  [[ -f $1/.complete ]] && return 1
  local fd
  exec {fd}>"$1.lock"
  flock "$fd"
  [[ ! -f $1/.complete ]]
}

# module_version DIR MODULE: the version DIR's go.mod requires of MODULE.
module_version() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }
# module_dir DIR MODULE: where the module cache holds MODULE at the version DIR's go.mod pins.
module_dir() { (cd "$1" && go mod download -json "$2@$(module_version "$1" "$2")" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'); }

# [cgo=1] [tags=T] build NAME MODULE LDFLAGS PACKAGE...: builds the packages of e2e/tools/NAME
# into a cached directory and prints it; pure Go unless cgo=1.
build() {
  local name=$1 module=$2 ldflags=$3
  shift 3
  local dir=$root/e2e/tools/$name version key out
  version=$(module_version "$dir" "$module")
  key=$(cat "$dir/go.mod" "$dir/go.sum" "$0" <(echo "$go_version ${cgo:-0} ${tags:-} $ldflags $*") | sha256sum | cut -c1-12)
  out=$cache/$name-$version-$key
  if locked "$out"; then
    say "building $name $version ($*) into $out"
    local start=$SECONDS
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    (cd "$dir" && CGO_ENABLED=${cgo:-0} go build -trimpath -tags "${tags:-}" -ldflags "$ldflags" -o "$out.tmp/" "$@")
    touch "$out.tmp/.complete"
    rm -rf "$out"
    mv "$out.tmp" "$out"
    say "built $name $version in $((SECONDS - start)) s"
  fi
  echo "$out"
}

# Kubernetes stamped with its release (scripts/k8s-ldflags.sh).
k8s_ldflags=$("$root/scripts/k8s-ldflags.sh" "$root/e2e/tools/kubernetes")
# The control plane's three, then the node's three: the second build reuses the packages they
# share from Go's build cache.
k8s=$(build kubernetes k8s.io/kubernetes "$k8s_ldflags" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)

etcd=$(build etcd go.etcd.io/etcd/server/v3 "-s -w" .)

# Helm stamps its own version and the Kubernetes version it assumes without a cluster (its
# Makefile: the client-go minor it links, major + 1).
helm_dir=$root/e2e/tools/helm
helm_version=$(module_version "$helm_dir" helm.sh/helm/v3)
client_go=$(module_version "$helm_dir" k8s.io/client-go)
[[ $client_go =~ ^v0\.([0-9]+)\. ]] || { say "helm's k8s.io/client-go $client_go is not v0.X"; exit 1; }
helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=${BASH_REMATCH[1]}"
done
helm=$(build helm helm.sh/helm/v3 "$helm_ldflags" helm.sh/helm/v3/cmd/helm)

# The SARIF Multitool (Microsoft's SARIF SDK), which validates `shmguard audit -o sarif` against
# the SARIF 2.1.0 schema and its rules, and GitHub code scanning's: installed with `npm ci` from
# e2e/tools/sarif's lockfile (integrity-checked), cached like the builds above. Its postinstall
# only marks the self-contained binary executable, so scripts stay off and this does it.
sarif_dir=$root/e2e/tools/sarif
sarif_key=$(cat "$sarif_dir/package.json" "$sarif_dir/package-lock.json" "$0" | sha256sum | cut -c1-12)
sarif=$cache/sarif-multitool-$sarif_key
if locked "$sarif"; then
  say "installing the SARIF Multitool into $sarif"
  rm -rf "$sarif.tmp"
  mkdir -p "$sarif.tmp"
  cp "$sarif_dir/package.json" "$sarif_dir/package-lock.json" "$sarif.tmp/"
  (cd "$sarif.tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  chmod u+x "$sarif.tmp/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
  touch "$sarif.tmp/.complete"
  rm -rf "$sarif"
  mv "$sarif.tmp" "$sarif"
fi

# bin_dir BUILD...: one directory with every program of the builds given (the Multitool's and
# etcd's by name), keyed by those builds, printed.
bin_dir() {
  local bin f
  bin=$cache/bin-$(echo "$sarif $*" | sha256sum | cut -c1-12)
  if locked "$bin"; then
    rm -rf "$bin.tmp"
    mkdir -p "$bin.tmp"
    for f in "$@"; do
      case $f in
      "${etcd-}") ln -sf "$etcd"/etcd "$bin.tmp/etcd" ;;
      "${helm-}") ln -sf "$helm"/helm "$bin.tmp/helm" ;;
      "${runc-}") ln -sf "$runc"/runc "$bin.tmp/runc" ;;
      *) ln -sf "$f"/* "$bin.tmp/" ;;
      esac
    done
    ln -sf "$sarif"/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool "$bin.tmp/sarif-multitool"
    touch "$bin.tmp/.complete"
    rm -rf "$bin"
    mv "$bin.tmp" "$bin"
  fi
  echo "$bin"
}
if $control_plane_only; then
  bin_dir "$k8s" "$etcd" "$helm"
  exit 0
fi

# The peers, stamped as their Makefiles stamp them, each with its release's install manifest
# (Kyverno's config/install-latest-testing.yaml, Gatekeeper's deploy/gatekeeper.yaml), read from
# the module at the pinned version.
if $peers; then
  kyverno_version=$(module_version "$root/e2e/tools/kyverno" github.com/kyverno/kyverno)
  kyverno=$(build kyverno github.com/kyverno/kyverno "-s -w -X github.com/kyverno/kyverno/pkg/version.BuildVersion=$kyverno_version" \
    github.com/kyverno/kyverno/cmd/kyverno)
  if [[ ! -f $kyverno/kyverno-install.yaml ]]; then
    cp "$(module_dir "$root/e2e/tools/kyverno" github.com/kyverno/kyverno)/config/install-latest-testing.yaml" "$kyverno/kyverno-install.yaml.$$"
    mv "$kyverno/kyverno-install.yaml.$$" "$kyverno/kyverno-install.yaml"
  fi
  gatekeeper_version=$(module_version "$root/e2e/tools/gatekeeper" github.com/open-policy-agent/gatekeeper/v3)
  gatekeeper=$(build gatekeeper github.com/open-policy-agent/gatekeeper/v3 \
    "-s -w -X github.com/open-policy-agent/gatekeeper/v3/pkg/version.Version=$gatekeeper_version" \
    github.com/open-policy-agent/gatekeeper/v3)
  if [[ ! -f $gatekeeper/gatekeeper-install.yaml ]]; then
    cp "$(module_dir "$root/e2e/tools/gatekeeper" github.com/open-policy-agent/gatekeeper/v3)/deploy/gatekeeper.yaml" "$gatekeeper/gatekeeper-install.yaml.$$"
    mv "$gatekeeper/gatekeeper-install.yaml.$$" "$gatekeeper/gatekeeper-install.yaml"
  fi
  bin_dir "$kyverno" "$gatekeeper"
  exit 0
fi

# The node's Kubernetes programs.
k8s_node=$(build kubernetes k8s.io/kubernetes "$k8s_ldflags" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy)

# The node's runtime. containerd stamps its version as its Makefile does; without cgo it has no
# btrfs snapshotter, which the node (overlayfs) does not use. runc needs cgo for its nsenter and,
# with the seccomp tag, libseccomp (Debian's libseccomp-dev, from install-deps.sh).
containerd_version=$(module_version "$root/e2e/tools/containerd" github.com/containerd/containerd/v2)
containerd=$(build containerd github.com/containerd/containerd/v2 \
  "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/containerd/containerd/v2/cmd/ctr)
runc_version=$(module_version "$root/e2e/tools/runc" github.com/opencontainers/runc)
runc=$(cgo=1 tags=seccomp build runc github.com/opencontainers/runc "-s -w -X main.version=${runc_version#v}" \
  github.com/opencontainers/runc)

# The simulated fleet (e2e/controlplane/fleet.go): KWOK (sigs.k8s.io/kwok) makes fake nodes and
# runs their pods by its stages, and the JobSet controller (sigs.k8s.io/jobset) makes a JobSet's
# Jobs as in production. Each module's own data goes beside its binary, read from the module at
# the pinned version: KWOK's "fast" stages (kustomize/stage: node-initialize, the node heartbeat
# with its Lease, pod-ready and pod-delete; not pod-complete, so a storm's pods stay Running), and
# the JobSet CRD (config/components/crd/bases).
kwok=$(build kwok sigs.k8s.io/kwok "-s -w" \
  sigs.k8s.io/kwok/cmd/kwok)
if [[ ! -f $kwok/kwok-stages.yaml ]]; then
  kwok_src=$(module_dir "$root/e2e/tools/kwok" sigs.k8s.io/kwok)/kustomize/stage
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml; do
    cat "$kwok_src/$f"
    echo "---"
  done > "$kwok/kwok-stages.yaml.$$"
  mv "$kwok/kwok-stages.yaml.$$" "$kwok/kwok-stages.yaml"
fi
jobset=$(build jobset sigs.k8s.io/jobset "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=$(module_version "$root/e2e/tools/jobset" sigs.k8s.io/jobset)" \
  sigs.k8s.io/jobset)
if [[ ! -f $jobset/jobset-crd.yaml ]]; then
  cp "$(module_dir "$root/e2e/tools/jobset" sigs.k8s.io/jobset)/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" \
    "$jobset/jobset-crd.yaml.$$"
  mv "$jobset/jobset-crd.yaml.$$" "$jobset/jobset-crd.yaml"
fi

# Prometheus and promtool (github.com/prometheus/prometheus): promtool checks and unit-tests the
# chart's alert rules; the node suite's Prometheus scrapes the agent and the webhook. Stamped as
# its Makefile (promu) stamps them; the web UI's assets are not built in (its API is what is used).
prom_version=$(module_version "$root/e2e/tools/prometheus" github.com/prometheus/prometheus)
prom_ldflags="-s -w"
for kv in "Version=${prom_version#v}" "Branch=release" "Revision=$prom_version"; do
  prom_ldflags+=" -X github.com/prometheus/common/version.$kv"
done
prometheus=$(build prometheus github.com/prometheus/prometheus "$prom_ldflags" \
  github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)

bin_dir "$k8s" "$k8s_node" "$etcd" "$helm" "$containerd" "$runc" "$kwok" "$jobset" "$prometheus"
