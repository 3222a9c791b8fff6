#!/usr/bin/env bash
# The layers include only the layers below them (ARCHITECTURE.md): core <- io <- http, kube <-
# server, agent <- cli; the webhook (server) and the node agent (agent) are rooms of their own.
# The link graph refuses a call across the wrong way; this also refuses a header-only include,
# which the linker never sees. Exits 1 naming each offending line.
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
exit $status
