#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each one.
#   scripts/fuzz.sh build                          installs clang and builds the targets, runs none
#   scripts/fuzz.sh [RUNS] [SECONDS] [TARGET...]   defaults: 10,000,000 runs, at most 1800 s each,
#                                                  every target (fuzz/<target>_fuzz.cc)
# The targets are built in ${FUZZ_BUILD_DIR:-build-fuzz}, or with SHMGUARD_FUZZ_BUILT=DIR taken
# from a build that already has them (scripts/test.sh's ASan build: -DSHMGUARD_FUZZ=ON).
# Seeds come from examples/, tests/testdata and (when present) the third-party manifests in
# ${SHMGUARD_CORPUS_DIR:-../shared/testdata}; corpora grow in <build>/corpus/<target>.
# A crash leaves <build>/<target>-crash-*; turn it into a regression test before fixing, and
# keep the input as tests/testdata/fuzz-regressions/<target>-<what>, which every run replays.
# SHMGUARD_FUZZ_SEED fixes libFuzzer's seed (0, the default, picks one at random);
# SHMGUARD_FUZZ_JOBS targets run at a time (default: one per CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${SHMGUARD_CORPUS_DIR:-../shared/testdata}
[ -d "$corpus" ] || echo "shmguard corpus not found at $corpus: seeding from examples/ only" >&2
mode=${1:-}
runs=${1:-10000000}
seconds=${2:-1800}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if ((${#targets[@]} == 0)); then
  for source in fuzz/*_fuzz.cc; do targets+=("$(basename "$source" _fuzz.cc)"); done
fi
./scripts/install-deps.sh
out=${SHMGUARD_FUZZ_BUILT:-${FUZZ_BUILD_DIR:-build-fuzz}}
if [[ -n ${SHMGUARD_FUZZ_BUILT:-} ]]; then
  grep -q '^SHMGUARD_FUZZ:BOOL=ON' "$out/CMakeCache.txt" 2>/dev/null ||
    { echo "fuzz: $out is not a build with -DSHMGUARD_FUZZ=ON" >&2; exit 1; }
else
  # The build's own lines only when it fails (a compiler's errors go to standard output).
  build_log=$(mktemp)
  CC=clang CXX=clang++ BUILD_DIR=$out ./scripts/build.sh -DSHMGUARD_FUZZ=ON -DSHMGUARD_BUILD_TESTS=OFF >"$build_log" 2>&1 ||
    { grep -E 'error|FAILED' "$build_log" | head -40 >&2; echo "fuzz: the fuzzers' build failed (its log: $build_log)" >&2; exit 1; }
  rm -f "$build_log"
fi
[ "$mode" = build ] && exit 0

seed() {  # seed corpora from the test data
  local dir=$out/corpus/$1; mkdir -p "$dir"
  case $1 in
    admission)
      cp "$out"/bodies/*.json "$dir/"
      cp "$corpus/k8s-api/admission.k8s.io.v1.AdmissionReview.json" "$dir/" 2>/dev/null || true
      cp tests/testdata/fuzz-regressions/admission-* "$dir/" ;;  # resizes: UPDATE with oldObject
    quantity)
      for q in 1.5Gi 1024Mi 0.5Ki 1.1Ki 1000000 1.5 100m 0.1m 3.3e9 1e19 1E 8Ei Gi +1Gi 5. 1K 64MB 9223372036854775807; do
        printf '%s' "$q" > "$dir/$(printf '%s' "$q" | md5sum | cut -c1-12)"
      done ;;
    audit)
      find "$corpus" examples tests/testdata/fuzz-regressions -name '*.yaml' -size -64k -exec cp {} "$dir/" \; 2>/dev/null || true
      python3 - "$dir" "$corpus" <<'PY'   # a List of real objects (JSON Lists take their own path)
import json, pathlib, sys
items = [json.loads(p.read_text()) for p in pathlib.Path(sys.argv[2], "k8s-api").glob("*.json")]
pathlib.Path(sys.argv[1], "list.json").write_text(json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}, indent=1))
PY
      ;;
    transport)  # whole requests as the API server sends them, pipelined, and framing edge cases
      python3 - "$dir" "$out/bodies" <<'PY'
import pathlib, sys
out, bodies = pathlib.Path(sys.argv[1]), sorted(pathlib.Path(sys.argv[2]).glob("*.json"))[:4]
def req(body, path="/mutate?timeout=10s", extra=""):
    return (f"POST {path} HTTP/1.1\r\nHost: shmguard.shmguard-system.svc:443\r\nContent-Type: application/json\r\n"
            f"{extra}Content-Length: {len(body)}\r\n\r\n").encode() + body
for i, b in enumerate(bodies):
    body = b.read_bytes()
    chunks = bytes([3, 17, 200, 5])  # a first byte saying 3 chunk sizes follow, then the sizes
    out.joinpath(f"one-{i}").write_bytes(b"\0" + req(body))
    out.joinpath(f"pipelined-{i}").write_bytes(chunks + req(body) + req(body, "/validate/enforce/pod-security/baseline"))
    out.joinpath(f"continue-{i}").write_bytes(b"\0" + req(body, extra="Expect: 100-continue\r\n"))
for i, raw in enumerate([b"GET /healthz HTTP/1.0\r\n\r\n", b"POST /mutate HTTP/1.1\nHost: x\n\n",
                         b"POST /mutate HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                         b"POST /mutate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"]):
    out.joinpath(f"edge-{i}").write_bytes(b"\0" + raw)
PY
      ;;
    labels)  # a kind, then namespace, pod, volume, workload, container, resource, cut at NUL
      printf 'Pod\0ml\0train-0\0dshm\0Job/train\0c\0nvidia.com/gpu.shared' > "$dir/plain"
      printf 'x\\"y\nz\0ns\0p\x1b[2J\0v\0w\0c\0r' > "$dir/escapes" ;;
    observations)
      find examples tests/testdata -name '*profile*.yaml' -exec cp {} "$dir/" \; 2>/dev/null || true
      printf 'apiVersion: shmguard.io/v1alpha1\nkind: ShmProfile\nmetadata: {name: job-train, namespace: ml}\nspec: {workload: Job/train}\nstatus: {peakBytes: 1048576, runs: 2}\n' > "$dir/one" ;;
    proc)  # this machine's own maps and cgroups, and a pod's of either cgroup driver
      cp /proc/self/maps "$dir/self-maps" 2>/dev/null || true
      cp /proc/self/cgroup "$dir/self-cgroup" 2>/dev/null || true
      printf '8a1f2c3d-0000-4b5e-9c7d-112233445566\n12:memory:/kubepods/burstable/pod8a1f2c3d-0000-4b5e-9c7d-112233445566/4f1e9a\n' > "$dir/cgroupfs"
      printf '0::/kubepods.slice/kubepods-pod8a1f2c3d_0000_4b5e_9c7d_112233445566.slice/cri-containerd-77ab.scope\n' > "$dir/systemd"
      printf '7f3a40000000-7f3a52c00000 rw-s 00000000 00:2f 12 /dev/shm/psm_1f2e (deleted)\n' > "$dir/maps" ;;
    report)
      cp examples/report/*.json "$dir/"
      find examples -name '*.yaml' -size -16k -exec cp {} "$dir/" \; ;;
    splitter)
      find "$corpus" examples -name '*.yaml' -size -16k -exec cp {} "$dir/" \; 2>/dev/null || true ;;
    config)
      cp deploy/20-configmap.yaml "$dir/"
      python3 -c "import yaml; print(yaml.safe_load(open('deploy/20-configmap.yaml'))['data']['policy.yaml'])" > "$dir/policy.yaml" ;;
  esac
}
# One target: seeds its corpus, runs it, prints what it found. Returns 1 when it failed.
run_target() {
  local t=$1
  seed "$t"
  # Every input a fuzzer once crashed on (tests/testdata/fuzz-regressions/<target>-*) runs again.
  find tests/testdata/fuzz-regressions -name "$t-*" -exec cp {} "$out/corpus/$t/" \;
  echo "== ${t}_fuzz: up to $runs runs or $seconds s"
  local status=0
  if (cd "$out" && ./"${t}_fuzz" -runs="$runs" -max_total_time="$seconds" -max_len=262144 -timeout=10 \
        -rss_limit_mb=2048 -seed="${SHMGUARD_FUZZ_SEED:-0}" -print_final_stats=1 -artifact_prefix="$t-" "corpus/$t" > "$t.log" 2>&1); then
    echo "   no crash, leak or timeout"
  else
    echo "   FAILED: see $out/$t.log and $out/$t-*"; status=1
  fi
  grep -E "runtime error|ERROR|Test unit|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)" \
    "$out/$t.log" | sed 's/^/   /'
  return "$status"
}
# The targets run SHMGUARD_FUZZ_JOBS at a time (default: one per CPU; each is one process); each
# one's lines are printed whole, in the targets' order.
parallel=${SHMGUARD_FUZZ_JOBS:-$(nproc)}
python3 bench/tools/make_bodies.py "$out/bodies" >/dev/null  # admission's and transport's seeds
results=$(mktemp -d)
for i in "${!targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  (
    code=0
    run_target "${targets[$i]}" >"$results/$i.out" 2>&1 || code=$?
    echo "$code" >"$results/$i.status"
  ) &
done
wait
for i in "${!targets[@]}"; do
  cat "$results/$i.out"
  [[ $(cat "$results/$i.status") == 0 ]] || status=1
done
rm -rf "$results"
exit "${status:-0}"
