#!/usr/bin/env bash
# The layers include only the layers below them (ARCHITECTURE.md): core <- io <- server <- cli.
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
forbid include/shmguard src/core -- '(io|server|cli)/' "the core must not include the adapters"
forbid src/io -- '(server|cli)/' "src/io must not include the server or the CLI"
forbid src/server -- 'cli/' "src/server must not include the CLI"
exit $status
