#!/usr/bin/env bash
# The supported versions, tested: for each Kubernetes minor a user runs today (1.33 to 1.37, each
# at the latest patch the Go module proxy serves, pinned in e2e/tools/matrix/<minor>/go.mod and,
# for 1.37, e2e/tools/kubernetes/go.mod), builds that kube-apiserver from its module, brings up
# the control plane of scripts/control-plane.sh with it (etcd, kube-controller-manager and helm
# as the e2e suite pins them), installs the chart, and runs the control-plane suite's webhook
# tests; where the API server serves MutatingAdmissionPolicy v1 (1.36 on), its policy-mode tests
# too. Prints a Markdown table (docs/operating.md, "Supported versions") and writes it, with each
# version's `go test` output, to DIR (default: a new directory under /tmp).
#
#   scripts/version-matrix.sh [DIR]           every minor
#   MINORS="1.33 1.36" scripts/version-matrix.sh   some of them
#
# Not part of the test command: it builds four API servers (3 to 3.5 minutes each on 2 cores, once;
# cached beside the other tools), then runs the tests on all five in about 4 minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=readonly CGO_ENABLED=0
cache=${SHMGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmguard-tools}
out=${1:-$(mktemp -d /tmp/shmguard-version-matrix.XXXXXX)}
mkdir -p "$out"
minors=${MINORS:-1.33 1.34 1.35 1.36 1.37}
say() { printf 'version-matrix: %s\n' "$*" >&2; }

# The control-plane suite's tests that need only the webhook, and those of policy mode.
webhook_tests='^(TestPods|TestNamespaces|TestOneWebhookCallPerGPUPodWhereNothingCanBeDenied|TestMatchConditionsKeepAwayOnlyPodsShmguardLeavesAlone|TestEveryRegisteredKind|TestControllersCreatePatchedPods|TestInferenceServersAreSizedFromTheirLaunch|TestAPodWithGpusFromAResourceClaimTemplateIsSized|TestResizeBelowShm|TestHelmRefusesPolicyModeWithoutMutatingAdmissionPolicy)$'
policy_tests='^(TestShmguardDown|TestPolicyModeGivesTheWebhooksAnswers|TestPolicyModeStaysWithinCELsCostBudgets|TestHybridModeGivesTheWebhooksAnswerAndTheFloorOtherwise|TestResizeBelowShmPolicyMode)$'

bin=$("$root/scripts/build-tools.sh")
shmguard=${SHMGUARD_BINARY:-$root/build/shmguard}
[[ -x $shmguard && -x ${shmguard%/*}/shmguard-webhook ]] || { "$root/scripts/install-deps.sh" >&2; "$root/scripts/build.sh" >&2; }
crds=${SHMGUARD_CRD_DIR:-$root/../shared/crds}
(cd "$root/e2e" && go build -o "$cache/control-plane" ./cmd/control-plane && go test -c -o "$out/e2e.test" .)

# kube_apiserver MINOR: the directory of that minor's kube-apiserver, built once from
# e2e/tools/matrix/MINOR (stamped with its release as hack/lib/version.sh does, so /version and
# helm's capabilities see it), else 1.37's from build-tools.sh.
kube_apiserver() {
  local dir=$root/e2e/tools/matrix/$1 version key dest flags
  [[ -d $dir ]] || { echo "$bin"; return; }
  version=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
  flags=$("$root/scripts/k8s-ldflags.sh" "$dir")
  # Keyed by what the binary is made of, so that an edit of the tests run here rebuilds nothing.
  key=$(cat "$dir/go.mod" "$dir/go.sum" <(go env GOVERSION) <(echo "$flags") | sha256sum | cut -c1-12)
  dest=$cache/matrix-kube-apiserver-$version-$key
  if [[ ! -f $dest/.complete ]]; then
    say "building kube-apiserver $version"
    local start=$SECONDS
    rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
    (cd "$dir" && go build -trimpath -ldflags "$flags" -o "$dest.tmp/" k8s.io/kubernetes/cmd/kube-apiserver)
    touch "$dest.tmp/.complete" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
    say "built kube-apiserver $version in $((SECONDS - start)) s"
  fi
  echo "$dest"
}

# count FILE WORD: how many tests (and subtests) the go test output in FILE reports as WORD.
count() { grep -c -- "--- $2:" "$1" || true; }

table=$out/matrix.md
{
  echo "| Kubernetes | kube-apiserver | MutatingAdmissionPolicy v1 | webhook tests | policy-mode tests | seconds |"
  echo "|---|---|---|---|---|---|"
} > "$table"
failed=0
for minor in $minors; do
  apiserver=$(kube_apiserver "$minor")
  # The cluster's tools, with this minor's kube-apiserver in place of 1.37's.
  tools=$out/bin-$minor
  rm -rf "$tools" && mkdir -p "$tools"
  for f in "$bin"/*; do ln -s "$f" "$tools/${f##*/}"; done
  ln -sf "$apiserver/kube-apiserver" "$tools/kube-apiserver"
  state=$out/cp-$minor
  start=$SECONDS
  say "Kubernetes $minor: control plane in $state"
  if ! "$cache/control-plane" up --dir "$state" --bin "$tools" --shmguard "$shmguard" --chart "$root/charts/shmguard" \
    --crds "$crds" > "$out/up-$minor.log" 2>&1; then
    say "Kubernetes $minor: the control plane did not come up ($out/up-$minor.log)"
    "$cache/control-plane" down --dir "$state" >/dev/null 2>&1 || true
    echo "| $minor | did not start | | | | |" >> "$table"
    failed=1
    continue
  fi
  version=$(KUBECONFIG=$state/kubeconfig "$tools/kubectl" version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
  map=$(KUBECONFIG=$state/kubeconfig "$tools/kubectl" api-resources --api-group=admissionregistration.k8s.io -o name |
    grep -qx 'mutatingadmissionpolicies.admissionregistration.k8s.io' && echo yes || echo no)
  run() { # run NAME PATTERN: the suite's tests matching PATTERN against this control plane
    (cd "$root/e2e" && SHMGUARD_CONTROL_PLANE_DIR=$state SHMGUARD_BINARY=$shmguard \
      "$out/e2e.test" -test.run "$2" -test.v -test.count=1 -test.timeout=20m > "$out/$1-$minor.log" 2>&1) && echo pass || echo fail
  }
  webhook=$(run webhook "$webhook_tests")
  cell() { echo "$1: $(count "$2" PASS) passed, $(count "$2" FAIL) failed, $(count "$2" SKIP) skipped"; }
  w=$(cell "$webhook" "$out/webhook-$minor.log")
  p="not run: no MutatingAdmissionPolicy v1"
  if [[ $map == yes ]]; then
    policy=$(run policy "$policy_tests")
    p=$(cell "$policy" "$out/policy-$minor.log")
    [[ $policy == pass ]] || failed=1
  fi
  [[ $webhook == pass ]] || failed=1
  "$cache/control-plane" down --dir "$state" >/dev/null 2>&1 || say "Kubernetes $minor: down failed"
  echo "| $minor | $version | $map | $w | $p | $((SECONDS - start)) |" >> "$table"
  say "Kubernetes $minor: $version, webhook $w; policy mode $p"
done
cat "$table"
say "results and logs in $out"
exit "$failed"
