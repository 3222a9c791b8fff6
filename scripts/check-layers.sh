#!/usr/bin/env bash
# What the build cannot refuse about the layers (ARCHITECTURE.md). The core's rooms are libraries
# (CMakeLists.txt, shmguard_core_room): a room links only the rooms declared below it and sees only
# their public headers, so the compiler refuses any other include of the core. The adapters
# include only the layers below them: core <- io <- http, kube <- server, agent <- cli; their
# libraries share one include directory, so this refuses a header-only include the wrong way,
# which the linker never sees. And the namespace rule. Exits 1 naming each offending line.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
fail() {
  echo "check-layers: $*" >&2
  status=1
}
forbid() {  # DIRS... -- PATTERN MESSAGE
  local dirs=() pattern message
  while [[ "$1" != "--" ]]; do dirs+=("$1"); shift; done
  pattern=$2 message=$3
  if grep -rnE "#include *[<\"]($pattern)" "${dirs[@]}"; then
    fail "$message"
  fi
}
forbid src/core -- 'httplib|yaml|spdlog|openssl|CLI|simdjson' "the core (src/core) must not include I/O libraries"
forbid src/core -- '(io|http|kube|server|agent|cli)/' "the core must not include the adapters"
forbid src/io -- '(http|kube|server|agent|cli)/' "src/io must not include the layers above it"
forbid src/http src/kube -- '(server|agent|cli)/' "src/http and src/kube must not include the webhook, the agent or the CLI"
forbid src/http -- 'kube/' "src/http (serving) must not include src/kube (the API client)"
forbid src/kube -- 'http/' "src/kube (the API client) must not include src/http (serving)"
forbid src/server -- '(agent|cli)/' "src/server (the webhook) must not include the agent or the CLI"
forbid src/agent -- '(server|cli)/' "src/agent must not include the webhook or the CLI"
forbid src/cli/commands/top_command.cc src/cli/commands/top_command.h -- 'server/' "top reads the agents through src/kube and src/agent, not the webhook"
# A program per deployable: the webhook's and the agent's rooms reach only the layer they run and
# cli's program room (the linker sees what they link; this, what they include).
forbid src/cli/webhook -- '(agent|cli/(outputs|report|commands|agent))/' "shmguard-webhook carries only the webhook: src/cli/webhook includes no agent and none of the CLI's rooms"
forbid src/cli/agent -- '(server|cli/(outputs|report|commands|webhook))/' "shmguard-agent carries only the agent: src/cli/agent includes no webhook and none of the CLI's rooms"
forbid src tests fuzz bench -- '[^">]*\.\./' "an include names its file from the top (\"core/<room>/…\", \"io/…\"), never with ../"

# The core's rooms: the directories of src/core are the rooms CMakeLists.txt declares.
mapfile -t rooms < <(sed -nE 's/^shmguard_core_room\(([a-z_]+).*/\1/p' CMakeLists.txt)
for dir in src/core/*; do
  room=${dir##*/}
  if [[ ! -d $dir ]]; then
    fail "$dir stands in no room: the core's files are in src/core/<room>/"
  elif [[ " ${rooms[*]} " != *" $room "* ]]; then
    fail "$dir is no room of CMakeLists.txt (shmguard_core_room): ${rooms[*]}"
  fi
done
# io's and cli's rooms share src/ as include directory: a room includes only rooms of its layer
# declared before it in CMakeLists.txt (add_library(shmguard_<layer>_<room>), bottom up).
for layer in io cli; do
  mapfile -t order < <(sed -nE "s/^add_library\(shmguard_${layer}_([a-z_]+) .*/\1/p" CMakeLists.txt)
  for path in src/$layer/*; do
    room=${path##*/}
    own=-1
    for i in "${!order[@]}"; do [[ ${order[$i]} == "$room" ]] && own=$i; done
    if ((own < 0)); then
      fail "$path is in no room of src/$layer: ${order[*]} (CMakeLists.txt)"
      continue
    fi
    while IFS=: read -r file line text; do
      other=$(sed -E "s/.*\"$layer\/([a-z_]+)\/.*/\1/" <<<"$text")
      [[ $other == "$room" ]] && continue
      for i in "${!order[@]}"; do
        if [[ ${order[$i]} == "$other" ]] && ((i < own)); then continue 2; fi
      done
      echo "$file:$line: $text" >&2
      fail "src/$layer/$room includes src/$layer/$other, which is not a room below it (${order[*]}, bottom up)"
    done < <(grep -rnE "#include *\"$layer/[a-z_]+/" "$path" || true)
  done
done
# A room's internal/ headers are its own: outside the room only its tests include them (the
# rooms' include directories already refuse it to the other rooms; this covers the adapters, the
# tests, the fuzzers and the benchmarks, which see src/).
while IFS=: read -r file line text; do
  room=$(sed -E 's/.*"core\/([a-z_]+)\/internal\/.*/\1/' <<<"$text")
  [[ $file == src/core/$room/* || $file == tests/core/$room/* ]] && continue
  echo "$file:$line: $text" >&2
  fail "only room $room and its tests include core/$room/internal/"
done < <(grep -rnE '#include *"core/[a-z_]+/internal/' src tests fuzz bench || true)

# One namespace rule: a layer's code is in shmguard::<layer> (src/io: shmguard::io, ...); the
# core's public headers and what they declare are in shmguard, the vocabulary every layer speaks;
# what a room keeps to itself (its internal/ headers, a public header's details) is in
# shmguard::<room>.
while IFS=: read -r file line text; do
  ns=$(sed -E 's/^namespace ([a-z_:]+).*/\1/' <<<"$text")
  dir=${file%/*}
  case $file in
    src/core/*/internal/*) own="shmguard::$(cut -d/ -f3 <<<"$file")" bare=no ;;
    src/core/*) own="shmguard::$(cut -d/ -f3 <<<"$file")" bare=yes ;;
    *) own="shmguard::$(cut -d/ -f2 <<<"$file")" bare=no ;;
  esac
  [[ $ns == "$own" || $ns == "$own::"* || ($bare == yes && $ns == shmguard) ]] && continue
  echo "$file:$line: $text" >&2
  fail "namespace $ns: code in $dir/ is in namespace $own$([[ $bare == yes ]] && echo ' (or shmguard)')"
done < <(grep -rnE '^namespace shmguard' src || true)
exit $status
