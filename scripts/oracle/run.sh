#!/usr/bin/env bash
# Measures vLLM's and SGLang's /dev/shm for every launch shape of scripts/oracle/measure.py and
# measure_sglang.py with the servers' own code, and writes tests/testdata/oracle/vllm-oracle.json
# and sglang-oracle.json (data this project makes by running upstream's code), and the two
# servers' option tables (src/core/servers/vllm_options.cc, sglang_options.cc). Not part of CI:
# it downloads gigabytes. docs/testing.md says when to rerun it.
#   scripts/oracle/run.sh            (as root: it needs a mount namespace)
# The venv (CPU only, from PyPI) is kept in ${SHMGUARD_ORACLE_VENV:-~/.cache/shmguard-oracle/venv}.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=0.33.0
sglang_version=0.5.23
venv=${SHMGUARD_ORACLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-oracle/venv}
wheels=$(dirname "$venv")/wheels
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import vllm" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --no-input "vllm==$version"
fi
# SGLang beside it, without its own pins (they differ from vLLM's by patch releases): vLLM's
# torch and transformers serve its parser and parallel_state, and the two modules its import
# chain needs beyond them.
if ! "$venv/bin/python" -c "import sglang" 2>/dev/null; then
  "$venv/bin/pip" install --no-input --no-deps "sglang==$sglang_version"
  "$venv/bin/pip" install --no-input ipython gguf
fi
mkdir -p "$wheels"
[[ -f $(ls "$wheels"/vllm-$version-*.whl 2>/dev/null | head -1) ]] ||
  "$venv/bin/pip" download --no-deps -d "$wheels" "vllm==$version"
[[ -f $(ls "$wheels"/sglang-$sglang_version-*.whl 2>/dev/null | head -1) ]] ||
  "$venv/bin/pip" download --no-deps -d "$wheels" "sglang==$sglang_version"
# The options of vLLM's own parser, for the reader's abbreviations.
VLLM_TARGET_DEVICE=cpu "$venv/bin/python" "$root/scripts/oracle/vllm_options.py" >"$root/src/core/servers/vllm_options.cc"
"$venv/bin/python" "$root/scripts/oracle/sglang_options.py" >"$root/src/core/servers/sglang_options.cc"
mkdir -p "$root/tests/testdata/oracle"
out=$root/tests/testdata/oracle/vllm-oracle.json
# A private tmpfs at /dev/shm, in a mount namespace of this run's own: the host's is untouched.
unshare -m --propagation private sh -c '
  mount -t tmpfs -o size=4T,mode=1777 oracle /dev/shm
  VLLM_TARGET_DEVICE=cpu exec "$0" "$1" "$2"' "$venv/bin/python" "$root/scripts/oracle/measure.py" \
  "$(ls "$wheels"/vllm-$version-*.whl | head -1)" >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
out=$root/tests/testdata/oracle/sglang-oracle.json
unshare -m --propagation private sh -c '
  mount -t tmpfs -o size=64G,mode=1777 oracle /dev/shm
  exec "$0" "$1" "$2"' "$venv/bin/python" "$root/scripts/oracle/measure_sglang.py" \
  "$(ls "$wheels"/sglang-$sglang_version-*.whl | head -1)" >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
