#!/usr/bin/env bash
# The chart's alerts (templates/prometheusrule.yaml): renders them with helm as an install with
# prometheusRule.enabled would, checks the rule groups with `promtool check rules`, and runs the
# alerts' unit tests (tests/alerts/*.yaml) with `promtool test rules` against them; checks that
# deploy/monitoring/prometheusrule.yaml is that rendering and that each alert has its section in
# docs/runbooks.md. helm and promtool come from scripts/build-tools.sh (built once, cached).
#   scripts/check-alerts.sh [--write]   --write renders deploy/monitoring/prometheusrule.yaml anew
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$("$root/scripts/build-tools.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# As deploy/ is rendered: release "shmguard" in namespace shmguard-system.
"$bin/helm" template shmguard "$root/charts/shmguard" --namespace shmguard-system --kube-version 1.37.0 \
  --set prometheusRule.enabled=true --show-only templates/prometheusrule.yaml >"$work/prometheusrule.yaml"
deployed=$root/deploy/monitoring/prometheusrule.yaml
if [[ ${1:-} == --write ]]; then
  { echo "# Rendered from charts/shmguard by scripts/check-alerts.sh --write; needs the Prometheus Operator's CRDs."
    grep -v '^# Source:' "$work/prometheusrule.yaml"; } >"$deployed"
fi
python3 - "$work/prometheusrule.yaml" "$work/rules.yaml" "$deployed" "$root/docs/runbooks.md" <<'PY'
import re, sys, yaml
rendered, rules, deployed, runbooks = sys.argv[1:]
obj = yaml.safe_load(open(rendered))
yaml.safe_dump({"groups": obj["spec"]["groups"]}, open(rules, "w"), sort_keys=False)
if yaml.safe_load(open(deployed)) != obj:
    sys.exit(f"check-alerts: {deployed} is not the chart's rendering: run scripts/check-alerts.sh --write")
anchors = {re.sub(r"[^a-z0-9-]", "", h.strip().lower().replace(" ", "-"))
           for h in re.findall(r"^#+ (.*)$", open(runbooks).read(), re.M)}
missing = []
for g in obj["spec"]["groups"]:
    for r in g["rules"]:
        url = r["annotations"]["runbook_url"]
        if url.split("#", 1)[1] not in anchors or r["alert"].lower() != url.split("#", 1)[1]:
            missing.append(r["alert"])
if missing:
    sys.exit("check-alerts: no section of docs/runbooks.md for " + ", ".join(missing))
# Every alert has a test that fires it and a test in which it stays quiet (exp_alerts: []).
import glob
fires, quiet = set(), set()
for t in glob.glob(re.sub(r"deploy/monitoring/prometheusrule.yaml$", "tests/alerts/*_test.yaml", deployed)):
    for group in yaml.safe_load(open(t))["tests"]:
        for case in group.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
alerts = {r["alert"] for g in obj["spec"]["groups"] for r in g["rules"] if "alert" in r}
untested = sorted(a for a in alerts if a not in fires or a not in quiet)
if untested:
    sys.exit("check-alerts: no test that fires it and one that keeps it quiet: " + ", ".join(
        f"{a} ({'fires' if a in fires else 'never fired'}, {'quiet' if a in quiet else 'never quiet'})" for a in untested))
PY
"$bin/promtool" check rules "$work/rules.yaml"
# The tests name their rule file as rules.yaml beside them.
cp "$root"/tests/alerts/*.yaml "$work/"
for t in "$root"/tests/alerts/*_test.yaml; do
  (cd "$work" && "$bin/promtool" test rules "$(basename "$t")")
done
