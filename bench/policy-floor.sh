#!/usr/bin/env bash
# What any mutating admission policy that patches a Pod costs a create, beside shmguard's policy
# mode: three stand-ins for the exported policies, each the sixth registration of its own run of
# bench/apiserver-latency.sh (POLICY_BEFORE), on the same control plane:
#   ops         shmguard's matchConditions, a constant JSON Patch of the three operations the
#               bench's pod gets (the volume, its mount, the plan annotation), no variables
#   annotation  shmguard's matchConditions, a constant patch of the plan annotation alone
#   bare        no matchConditions, the plan annotation alone
# None has validating policies. Results: bench/README.md, "What any policy that patches a Pod costs".
#   bench/policy-floor.sh [PODS per registration and round, 300] [ROUNDS, 3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${SHMGUARD_BINARY:-$root/build/shmguard}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$binary" policy export > "$work/policies.yaml"
python3 - "$work" <<'PY'
import sys, yaml
work = sys.argv[1]
docs = [d for d in yaml.safe_load_all(open(f"{work}/policies.yaml")) if d]
policy, binding = [d for d in docs if d["kind"].startswith("MutatingAdmissionPolicy")]
plan = 'JSONPatch{op: "add", path: "/metadata/annotations/shmguard.io~1plan", value: "{\\"gpus\\":4,\\"verdict\\":\\"ok\\"}"}'
ops = ('JSONPatch{op: "add", path: "/spec/volumes", value: [Object.spec.volumes{name: "dshm", '
       'emptyDir: Object.spec.volumes.emptyDir{medium: "Memory", sizeLimit: "5783Mi"}}]}, '
       'JSONPatch{op: "add", path: "/spec/containers/0/volumeMounts", value: '
       '[Object.spec.containers.volumeMounts{name: "dshm", mountPath: "/dev/shm"}]}, ' + plan)
for name, patch, conditions in [("ops", ops, True), ("annotation", plan, True), ("bare", plan, False)]:
    p = yaml.safe_load(yaml.safe_dump(policy))
    p["spec"]["variables"] = []
    p["spec"]["mutations"][0]["jsonPatch"]["expression"] = "[" + patch + "]"
    if not conditions:
        del p["spec"]["matchConditions"]
    yaml.safe_dump_all([p, binding], open(f"{work}/{name}.yaml", "w"), sort_keys=False)
    with open(f"{work}/{name}.sh", "w") as f:  # stands in for `shmguard policy export`
        f.write(f"#!/bin/sh\ncat {work}/{name}.yaml\n")
PY
for name in ops annotation bare; do
  chmod +x "$work/$name.sh"
  echo "== $name"
  POLICY_BEFORE=$work/$name.sh "$root/bench/apiserver-latency.sh" "${1:-300}" "${2:-3}"
done
