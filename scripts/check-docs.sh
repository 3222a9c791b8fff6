#!/usr/bin/env bash
# Every path of this repository's code that the docs name exists: src/... in ARCHITECTURE.md,
# README.md, SECURITY.md, docs/ and bench/, and a file named from its layer in backquotes
# (`server/server.cc`, `core/verdict/admission.cc`) as src/ holds it. A name with a glob
# (`src/io/formats/fast_json.*`) matches a file; a placeholder (`src/core/<room>/`) is left alone. Other
# projects' paths (NCCL's `src/transport/shm.cc`) are not ours: only src/<layer>/ is read. Exits 1 naming each missing path with the file and line that names it.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while IFS=: read -r file line path; do
  path=${path%.}
  [[ $path == *"<"* ]] && continue
  # shellcheck disable=SC2086  # a glob in the doc is matched as a glob
  if ! compgen -G "$path" >/dev/null && [[ ! -e $path ]]; then
    echo "$file:$line: names $path, which does not exist" >&2
    status=1
  fi
done < <(
  docs=(ARCHITECTURE.md README.md SECURITY.md docs bench)
  grep -rnoE 'src/(core|io|http|kube|server|agent|cli)/[A-Za-z0-9_./*<>-]*' "${docs[@]}" --include='*.md' || true
  grep -rnoE '`(core|io|http|kube|server|agent|cli)/[A-Za-z0-9_/<>-]+\.(cc|h|\*)`' "${docs[@]}" --include='*.md' |
    sed -E 's/:`/:src\//; s/`$//' || true
)

# ARCHITECTURE.md's table of the core's rooms lists them from the top, in the reverse of the order
# CMakeLists.txt declares them (bottom up).
declared=$(sed -nE 's/^shmguard_core_room\(([a-z_]+).*/\1/p' CMakeLists.txt | tac | tr '\n' ' ')
documented=$(sed -nE 's/^\| `([a-z_]+)\/` \|.*/\1/p' ARCHITECTURE.md | tr '\n' ' ')
if [[ $declared != "$documented" ]]; then
  echo "ARCHITECTURE.md lists the core's rooms as: $documented" >&2
  echo "CMakeLists.txt declares them (read from the top): $declared" >&2
  status=1
fi
exit $status
