#!/usr/bin/env bash
# Formats every C++ file of the project with clang-format (.clang-format: Google style, 120
# columns). --check changes nothing and fails, naming the files, when one is not formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -- '*.cc' '*.h' 2>/dev/null || find src tests bench fuzz -name '*.cc' -o -name '*.h')
if [[ "${1:-}" == "--check" ]]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files formatted as .clang-format says"
else
  clang-format -i "${files[@]}"
fi
