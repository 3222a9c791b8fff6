#!/usr/bin/env bash
# Builds the images the end-to-end suite's node runs, with nothing pulled from a registry, and
# prints the directory that holds them as image archives (docker-archive tars, which
# `ctr images import` takes) with images.env naming each:
#   - debian:12 and debian:12-slim, made by mmdebstrap from Debian's archive (the host's apt
#     sources), the bases the Dockerfiles name;
#   - shmguard-webhook and shmguard-agent, built by buildah from the project's own Dockerfile:
#     from the programs beside $SHMGUARD_BINARY when it is set (built by this Debian 12 host: the
#     Dockerfile's `<program>-prebuilt` targets, the same runtime without compiling again), else
#     by its build stage (`--target webhook`, `--target agent`); SHMGUARD_IMAGES_BASES=1 builds
#     everything but shmguard's images themselves (scripts/test.sh runs that from its start,
#     before its binary exists);
#   - the training image, Debian's python3-torch and e2e/images/train/dataloader.py
#     (e2e/images/train/Dockerfile);
#   - the pause image, built from k8s.io/kubernetes's build/pause/linux/pause.c as its
#     Makefile does.
# Each is cached outside the tree (${SHMGUARD_TOOLS_CACHE:-~/.cache/shmguard-tools}/images), keyed
# by its inputs, so a second run only checks that they are there, and images no key names any
# more are removed. buildah keeps its storage there too, not under /var.
#
# `--dockerfile-check`: the Dockerfile's own build (its build stage compiles shmguard as a user's
# `docker build` would), as a check, once per change to it or to the build files (keyed beside
# the cache), in a buildah storage and lock of its own: scripts/test.sh runs it beside everything
# else, and the node's images never wait for it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}/images
mkdir -p "$cache"
export PATH=/usr/local/go/bin:$PATH
check=false
case ${1:-} in
--dockerfile-check) check=true ;;
"") ;;
*)
  echo "usage: $0 [--dockerfile-check]" >&2
  exit 2
  ;;
esac
say() { printf 'build-images: %s\n' "$*" >&2; }
# use_storage NAME RUN: buildah's storage and its run root, under the cache.
use_storage() {
  storage=$cache/$1
  buildah=(buildah --root "$storage" --runroot "$cache/$2" --storage-driver overlay)
}
use_storage storage run
# One run at a time over the cache: runs share buildah's storage, and each one's clean-up on exit
# (below) takes down what is mounted there.
exec 9>"$cache/.lock"
flock 9
script_key=$(sha256sum "$0" | cut -c1-12)

# hash FILE|DIR...: one key for the contents of files (sorted by name).
hash() { find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12; }

# archive NAME REF: pushes the image REF from buildah's storage to NAME.tar in the cache.
archive() {
  rm -f "$cache/$1.tar.tmp"
  "${buildah[@]}" push --quiet "$2" "docker-archive:$cache/$1.tar.tmp:$2" >/dev/null
  mv "$cache/$1.tar.tmp" "$cache/$1.tar"
}

# fresh NAME KEY: true when NAME was built from KEY already.
fresh() { [[ -f $cache/$1.tar && $(cat "$cache/$1.key" 2>/dev/null) == "$2" ]]; }
done_with() { echo "$2" >"$cache/$1.key"; }

# The Debian base images. mmdebstrap writes the host's apt sources into each, so the
# Dockerfiles' apt-get reaches the archive the host does.
sources=$(mktemp)
# On exit, whatever happened: buildah's storage leaves mounts on the host — the overlay driver
# mounts its directory privately on itself, and a build that was stopped keeps its working
# container mounted — so they are taken down, as the host was before.
cleanup() {
  rm -f "$sources" "$cache"/*-rootfs.tar "$cache"/*.sources "$cache"/*.tar.tmp
  "${buildah[@]}" rm --all >/dev/null 2>&1 || true
  local m
  for m in $(awk -v d="$storage/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}
trap cleanup EXIT
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] || continue
  if [[ $f == *.sources ]]; then cat "$f"; else grep -E '^deb ' "$f" || true; fi
  echo
done >"$sources"
base_key=$(cat "$sources" | sha256sum | cut -c1-12)-$script_key
# base NAME REF VARIANT [MMDEBSTRAP ARGS...]
base() {
  local name=$1 ref=$2 variant=$3
  shift 3
  fresh "$name" "$base_key" && return
  say "making $ref with mmdebstrap ($variant)"
  local start=$SECONDS rootfs="$cache/$name-rootfs.tar" sourcesfile="$cache/$name.sources"
  cp "$sources" "$sourcesfile"
  mmdebstrap --quiet --variant="$variant" --format=tar "$@" bookworm "$rootfs" "$sourcesfile"
  local c
  c=$("${buildah[@]}" from scratch)
  "${buildah[@]}" add --quiet "$c" "$rootfs" / >/dev/null
  "${buildah[@]}" config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  "${buildah[@]}" commit --quiet --rm "$c" "$ref" >/dev/null
  rm -f "$rootfs" "$sourcesfile"
  archive "$name" "$ref"
  done_with "$name" "$base_key"
  say "made $ref in $((SECONDS - start)) s"
}
# debian:12 is Debian's minbase; -slim also drops documentation, man pages and locales, as the
# official slim images do.
base debian docker.io/library/debian:12 minbase
base debian-slim docker.io/library/debian:12-slim minbase \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*'

# [target=T] bud NAME REF CONTEXT DOCKERFILE KEY: builds a Dockerfile (its stage T) with buildah,
# never pulling.
bud() {
  local name=$1 ref=$2 context=$3 dockerfile=$4 key=$5
  fresh "$name" "$key" && return
  say "building $ref from $dockerfile"
  local start=$SECONDS
  "${buildah[@]}" bud --quiet --pull-never --isolation chroot --layers=false ${target:+--target "$target"} \
    -f "$dockerfile" -t "$ref" "$context" >/dev/null
  archive "$name" "$ref"
  done_with "$name" "$key"
  say "built $ref in $((SECONDS - start)) s"
}

# shmguard's two images, the webhook's and the agent's (the Dockerfile's targets): the context is
# what .dockerignore lets through, and so is the key.
version=$(sed -nE 's/^appVersion: *"?([^"]+)"?/\1/p' "$root/charts/shmguard/Chart.yaml")
programs=(webhook agent)
build_files=(Dockerfile .dockerignore CMakeLists.txt scripts/install-deps.sh scripts/build.sh)
if $check; then
  # The bases are made; the rest runs in the check's own storage, under its own lock, so that
  # the node's images are built meanwhile. Its storage keeps nothing: the key is the cache.
  check_key=$base_key-$(cd "$root" && hash "${build_files[@]}")
  fresh dockerfile-check "$check_key" && exit 0
  cleanup
  flock -u 9
  use_storage check-storage check-run
  exec 9>"$cache/.check.lock"
  flock 9
  for name in debian debian-slim; do
    id=$("${buildah[@]}" pull --quiet "docker-archive:$cache/$name.tar")
    "${buildah[@]}" tag "$id" "$(tar -xOf "$cache/$name.tar" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["RepoTags"][0])')"
  done
  bud dockerfile-check docker.io/shmguard-e2e/dockerfile-check:latest "$root" "$root/Dockerfile" "$check_key"
  "${buildah[@]}" rmi --all --force >/dev/null
  exit 0
fi
for program in "${programs[@]}"; do
  ref=docker.io/library/shmguard-$program:$version
  if [[ -n ${SHMGUARD_BINARY:-} ]]; then
    # SHMGUARD_BINARY is the command line's; the deployables' programs are built beside it.
    context=$(mktemp -d)
    cp "$(dirname "$SHMGUARD_BINARY")/shmguard-$program" "$context/"
    strip "$context/shmguard-$program"
    key=$base_key-$(hash "$context" "$root/Dockerfile")
    target=$program-prebuilt bud "shmguard-$program" "$ref" "$context" "$root/Dockerfile" "$key"
    rm -rf "$context"
  elif [[ ${SHMGUARD_IMAGES_BASES:-} != 1 ]]; then
    key=$base_key-$(cd "$root" && hash "${build_files[@]}" src)
    target=$program bud "shmguard-$program" "$ref" "$root" "$root/Dockerfile" "$key"
  fi
done

train_key=$base_key-$(hash "$root/e2e/images/train")
train_ref=docker.io/shmguard-e2e/train:$train_key
bud train "$train_ref" "$root/e2e/images/train" "$root/e2e/images/train/Dockerfile" "$train_key"

# The pause image every pod's sandbox runs, from the kubernetes module the node is built from.
k8s_dir=$root/e2e/tools/kubernetes
k8s_version=$(cd "$k8s_dir" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
k8s_src=$(cd "$k8s_dir" && go mod download -json "k8s.io/kubernetes@$k8s_version" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
pause_tag=$(sed -nE 's/^TAG \?= *//p' "$k8s_src/build/pause/Makefile")
pause_ref=registry.k8s.io/pause:$pause_tag
pause_key=$k8s_version-$script_key
if ! fresh pause "$pause_key"; then
  say "building $pause_ref from $k8s_src/build/pause/linux/pause.c"
  work=$(mktemp -d)
  gcc -Os -Wall -Werror -static "-DVERSION=v$pause_tag-$k8s_version" -o "$work/pause" "$k8s_src/build/pause/linux/pause.c"
  c=$("${buildah[@]}" from scratch)
  "${buildah[@]}" copy --quiet "$c" "$work/pause" /pause >/dev/null
  "${buildah[@]}" config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  "${buildah[@]}" commit --quiet --rm "$c" "$pause_ref" >/dev/null
  rm -rf "$work"
  archive pause "$pause_ref"
  done_with pause "$pause_key"
fi

# Images no key names any more: an earlier training image, the Dockerfile check's (its own
# storage now), and whatever they alone held.
for old in $("${buildah[@]}" images --format '{{.Name}}:{{.Tag}}' | grep '^docker.io/shmguard-e2e/' | grep -vxF "$train_ref"); do
  "${buildah[@]}" rmi --force "$old" >/dev/null
done
"${buildah[@]}" rmi --prune >/dev/null 2>&1 || true

# Only a run that built shmguard's images names the images.
[[ ${SHMGUARD_IMAGES_BASES:-} == 1 ]] && { echo "$cache"; exit 0; }
cat >"$cache/images.env.tmp" <<ENV
SHMGUARD_WEBHOOK_IMAGE=docker.io/library/shmguard-webhook:$version
SHMGUARD_AGENT_IMAGE=docker.io/library/shmguard-agent:$version
SHMGUARD_TRAIN_IMAGE=$train_ref
SHMGUARD_PAUSE_IMAGE=$pause_ref
ENV
mv "$cache/images.env.tmp" "$cache/images.env"
echo "$cache"
