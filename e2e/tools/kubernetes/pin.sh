#!/usr/bin/env bash
# Pins this module to k8s.io/kubernetes VERSION (e.g. v1.37.2): requires it, and replaces each
# staging module it requires with the published release of the same patch (v0.37.2), as the
# list in that release's own go.mod says (`k8s.io/X => ./staging/src/k8s.io/X`). Go honours
# `replace` only in the main module, so k8s.io/kubernetes cannot be built any other way.
# Rerun it to move to another release; it rewrites go.mod and go.sum. With DIR, pins the module
# there instead (scripts/version-matrix.sh's kube-apiservers, e2e/tools/matrix/).
#   pin.sh VERSION [DIR]
set -euo pipefail
cd "${2:-$(dirname "$0")}"
version=${1:?usage: pin.sh VERSION [DIR] (e.g. v1.37.2)}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "pin.sh: $version is not a v1.MINOR.PATCH release" >&2; exit 2; }
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
# The staging modules the release requires (at v0.0.0) and maps to ./staging/src/.
mapfile -t modules < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// {replaced[$1] = 1}
  $2 == "v0.0.0" {required[$1] = 1}
  END {for (m in replaced) if (m in required) print m}' "$gomod" | sort)
((${#modules[@]})) || { echo "pin.sh: no staging modules found in $gomod" >&2; exit 1; }
for m in $(go mod edit -json | python3 -c 'import json,sys; [print(r["Old"]["Path"]) for r in json.load(sys.stdin).get("Replace") or []]'); do
  go mod edit -dropreplace="$m"
done
args=()
for m in "${modules[@]}"; do args+=("-replace=$m=$m@$staging"); done
go mod edit "${args[@]}" -require="k8s.io/kubernetes@$version"
go mod tidy
echo "pinned k8s.io/kubernetes $version with ${#modules[@]} staging modules at $staging"
