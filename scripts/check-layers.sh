#!/usr/bin/env bash
# The layers include only the layers below them (ARCHITECTURE.md): core <- io <- http, kube <-
# server, agent <- cli; the webhook (server) and the node agent (agent) are rooms of their own.
# The link graph refuses a call across the wrong way; this also refuses a header-only include,
# which the linker never sees. Inside the core, the rooms' floors (below). Exits 1 naming each
# offending line.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
forbid() {  # DIRS... -- PATTERN MESSAGE
  local dirs=() pattern message
  while [[ "$1" != "--" ]]; do dirs+=("$1"); shift; done
  pattern=$2 message=$3
  if grep -rnE "#include *[<\"]($pattern)" "${dirs[@]}"; then
    echo "check-layers: $message" >&2
    status=1
  fi
}
forbid include/shmguard src/core -- 'httplib|yaml|spdlog|openssl|CLI|simdjson' \
  "the core (include/shmguard, src/core) must not include I/O libraries"
forbid include/shmguard src/core -- '(io|http|kube|server|agent|cli)/' "the core must not include the adapters"
forbid src/io -- '(http|kube|server|agent|cli)/' "src/io must not include the layers above it"
forbid src/http src/kube -- '(server|agent|cli)/' "src/http and src/kube must not include the webhook, the agent or the CLI"
forbid src/http -- 'kube/' "src/http (serving) must not include src/kube (the API client)"
forbid src/kube -- 'http/' "src/kube (the API client) must not include src/http (serving)"
forbid src/server -- '(agent|cli)/' "src/server (the webhook) must not include the agent or the CLI"
forbid src/agent -- '(server|cli)/' "src/agent must not include the webhook or the CLI"
forbid src/cli/top_command.cc src/cli/top_command.h -- 'server/' "top reads the agents through src/kube and src/agent, not the webhook"

# The core's rooms, on floors (ARCHITECTURE.md): a room includes only rooms on lower floors, never
# one on its own floor or above. The public headers mirror them (include/shmguard/<room>/), and a
# room's private headers are included by another as "core/<room>/<name>.h".
declare -A floor=([values]=1 [checks]=2 [policy]=3 [workloads]=4 [plan]=5 [servers]=6 [facts]=7 [sizing]=8
  [patch]=9 [cel]=9 [verdict]=10 [node]=11)
for dir in src/core/* include/shmguard/*; do
  [[ -d $dir ]] || { echo "check-layers: $dir is in no room of the core" >&2; status=1; continue; }
  room=${dir##*/}
  [[ -n ${floor[$room]:-} ]] || { echo "check-layers: $dir: no floor for room $room" >&2; status=1; continue; }
  while IFS=: read -r file line text; do
    other=$(sed -E 's/.*"(shmguard|core)\/([a-z_]+)\/.*/\2/' <<<"$text")
    [[ $other == "$room" ]] && continue
    if [[ -z ${floor[$other]:-} ]]; then
      echo "$file:$line: $text" >&2
      echo "check-layers: no room $other" >&2
      status=1
    elif ((floor[$other] >= floor[$room])); then
      echo "$file:$line: $text" >&2
      echo "check-layers: room $room (floor ${floor[$room]}) includes room $other (floor ${floor[$other]}): a room includes only lower floors" >&2
      status=1
    fi
  done < <(grep -rnE '#include *"(shmguard|core)/[a-z_]+/' "$dir" || true)
done
for file in $(find src/core include/shmguard -maxdepth 1 -type f); do
  echo "check-layers: $file stands in no room: the core's files are in src/core/<room>/ and include/shmguard/<room>/" >&2
  status=1
done
exit $status
