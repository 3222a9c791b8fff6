#!/usr/bin/env bash
# `shmguard report` in a real browser: writes the page and its JSON for examples/report/cluster.json
# (a `kubectl get pods,shmprofiles -A -o json` of our own making) with the built binary, and runs
# tests/report/browser_test.py on them (Debian's chromium and chromedriver, python3-selenium: the
# page loads with no console message and no request but itself, the filter and the sort work, and
# every number on the page is the JSON's).
#   scripts/check-report.sh [--write]   --write also saves the screenshot docs/report.png
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${SHMGUARD_BINARY:-$root/${BUILD_DIR:-build}/shmguard}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$binary" report "$root/examples/report/cluster.json" --json "$work/report.json" >"$work/report.html"
shot=()
[[ ${1:-} == --write ]] && shot=("$root/docs/report.png")
# chromium's crash handler and caches stay in the run's directory.
HOME=$work timeout 300 /usr/bin/python3 "$root/tests/report/browser_test.py" "$work/report.html" "$work/report.json" \
  "${shot[@]}"
