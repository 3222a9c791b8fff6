#!/usr/bin/env bash
# A Kubernetes control plane on loopback with shmguard in front of it:
#   up    builds what is missing (scripts/build-tools.sh, shmguard), starts etcd, kube-apiserver
#         (PodSecurity and both webhook admission plugins on), kube-controller-manager and
#         `shmguard-webhook`, installs the CRDs of every kind shmguard evaluates, registers
#         shmguard's webhooks as `helm template charts/shmguard` renders them (clientConfig
#         pointed at https://127.0.0.1:PORT/<the same path>), waits until a probe pod is patched,
#         and prints the lines to eval: export KUBECONFIG=... and PATH=... (kubectl and helm)
#   up --node
#         also adds a node, all of it inside a network namespace of its own (the pods, their
#         addresses and the Service range exist nowhere else; the host reaches the API server
#         through a forwarder on loopback): containerd, runc and the CNI bridge, the kubelet,
#         kube-scheduler, kube-proxy and a GPU device plugin (8 nvidia.com/gpu); builds the images
#         (scripts/build-images.sh: shmguard's from its Dockerfile, the training image, pause),
#         imports them, and installs shmguard with `helm install charts/shmguard` instead of
#         running it on loopback; env then also prints export SHMGUARD_TRAIN_IMAGE=...
#   env   prints those lines again
#   down  stops everything up started and removes its state, with the node's mounts, cgroups,
#         network namespaces, kernel settings and host paths
# The state lives in ${SHMGUARD_CONTROL_PLANE_DIR:-/tmp/shmguard-control-plane}; the CRDs are read
# from ${SHMGUARD_CRD_DIR:-../shared/crds beside the checkout}; shmguard is ${SHMGUARD_BINARY:-build/shmguard}.
#
#   eval "$(./scripts/control-plane.sh up)"
#   kubectl apply --dry-run=server -f examples/
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=readonly
dir=${SHMGUARD_CONTROL_PLANE_DIR:-${TMPDIR:-/tmp}/shmguard-control-plane}
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
verb=${1:-}
node=()
case $verb in up | env | down) ;; *)
  echo "usage: $0 up [--node]|env|down" >&2
  exit 2
  ;;
esac
if [[ $verb == up && ${2:-} == --node ]]; then
  node=(--node)
elif (($# > 1)); then
  echo "usage: $0 up [--node]|env|down" >&2
  exit 2
fi

# The command that runs the control plane (e2e/cmd/control-plane), rebuilt when its sources change.
mkdir -p "$cache"
(cd "$root/e2e" && go build -o "$cache/control-plane" ./cmd/control-plane)
cp=$cache/control-plane

case $verb in
up)
  # A node needs every component; a control plane alone, only its own (build-tools.sh).
  if ((${#node[@]})); then bin=$("$root/scripts/build-tools.sh"); else bin=$("$root/scripts/build-tools.sh" --control-plane); fi
  shmguard=${SHMGUARD_BINARY:-$root/build/shmguard}
  # The three programs are built together: shmguard-webhook and shmguard-agent beside shmguard.
  if [[ ! -x $shmguard || ! -x ${shmguard%/*}/shmguard-webhook || ! -x ${shmguard%/*}/shmguard-agent ]]; then
    "$root/scripts/install-deps.sh" >&2
    "$root/scripts/build.sh" >&2
  fi
  crds=${SHMGUARD_CRD_DIR:-$root/../shared/crds}
  [[ -d $crds ]] || echo "control-plane: no CRDs at $crds: only Pods and built-in kinds will be served" >&2
  if ((${#node[@]})); then
    # The node runs shmguard's images made from these same programs (scripts/build-images.sh).
    images=$(SHMGUARD_BINARY="$shmguard" "$root/scripts/build-images.sh")
    (cd "$root/e2e" && go build -o "$cache/gpu-device-plugin" ./cmd/gpu-device-plugin)
    node+=(--images "$images" --gpu-plugin "$cache/gpu-device-plugin")
  fi
  exec "$cp" up --dir "$dir" --bin "$bin" --shmguard "$shmguard" --chart "$root/charts/shmguard" --crds "$crds" "${node[@]}"
  ;;
env | down) exec "$cp" "$verb" --dir "$dir" ;;
esac
