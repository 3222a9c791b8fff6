#!/usr/bin/env bash
# Measures vLLM's /dev/shm for every launch shape of scripts/oracle/measure.py with vLLM's own
# code, and writes tests/testdata/oracle/vllm-oracle.json (data this project makes by running
# upstream's code). Not part of CI: it downloads gigabytes. docs/testing.md says when to rerun it.
#   scripts/oracle/run.sh            (as root: it needs a mount namespace)
# The venv (CPU only, from PyPI) is kept in ${SHMGUARD_ORACLE_VENV:-~/.cache/shmguard-oracle/venv}.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=0.33.0
venv=${SHMGUARD_ORACLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-oracle/venv}
wheels=$(dirname "$venv")/wheels
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import vllm" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --no-input "vllm==$version"
fi
mkdir -p "$wheels"
[[ -f $(ls "$wheels"/vllm-$version-*.whl 2>/dev/null | head -1) ]] ||
  "$venv/bin/pip" download --no-deps -d "$wheels" "vllm==$version"
# The options of vLLM's own parser, for the reader's abbreviations.
VLLM_TARGET_DEVICE=cpu "$venv/bin/python" "$root/scripts/oracle/vllm_options.py" >"$root/src/core/servers/vllm_options.cc"
mkdir -p "$root/tests/testdata/oracle"
out=$root/tests/testdata/oracle/vllm-oracle.json
# A private tmpfs at /dev/shm, in a mount namespace of this run's own: the host's is untouched.
unshare -m --propagation private sh -c '
  mount -t tmpfs -o size=4T,mode=1777 oracle /dev/shm
  VLLM_TARGET_DEVICE=cpu exec "$0" "$1" "$2"' "$venv/bin/python" "$root/scripts/oracle/measure.py" \
  "$(ls "$wheels"/vllm-$version-*.whl | head -1)" >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
