// Evaluate: discovery, the namespace's rule, and every pod template's verdict (EvaluatePod)
// gathered into the workload's verdict and patch.
#include "shmguard/evaluation.h"

#include <algorithm>

#include "pod_evaluation.h"

namespace shmguard {
namespace {

std::string Prefixed(const std::string& label, const std::string& text, bool prefix) {
  return prefix ? label + ": " + text : text;
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kSkip: return "skip";
    case Verdict::kOk: return "ok";
    case Verdict::kPatch: return "patch";
    case Verdict::kDeny: return "deny";
  }
  return "skip";
}

std::vector<std::string> Evaluation::AllReasons() const {
  std::vector<std::string> out = reasons;
  for (const auto& p : pods) {
    for (const auto& r : p.reasons) out.push_back(Prefixed(p.label, r, pods.size() > 1));
  }
  return out;
}

std::vector<std::string> Evaluation::AllWarnings() const {
  std::vector<std::string> out = warnings;
  for (const auto& p : pods) {
    for (const auto& r : p.warnings) out.push_back(Prefixed(p.label, r, pods.size() > 1));
  }
  return out;
}

int64_t Evaluation::RequiredBytes() const {
  int64_t out = 0;
  for (const auto& p : pods) {
    out = std::max(out, p.required_bytes);
  }
  return out;
}

Evaluation Evaluate(JsonNode object, const Policy& policy, std::string_view namespace_name, Wording wording,
                    const RuntimeCatalog* runtimes, PodSecurityLevel namespace_pod_security) {
  Evaluation ev;
  auto workload = FindPodTemplates(object, runtimes);
  if (!workload) {
    const Error& e = workload.error();
    ev.verdict = e.code == Code::kUnsupportedKind ? Verdict::kSkip : Verdict::kDeny;
    ev.reasons.push_back(e.ToString());
    ev.kind = object.StringMember("kind");
    return ev;
  }
  const Workload& w = *workload;
  ev.workload = true;
  ev.api_version = w.api_version;
  ev.kind = w.kind;
  ev.name = w.name;
  ev.namespace_name = !namespace_name.empty()     ? std::string(namespace_name)
                      : !w.namespace_name.empty() ? w.namespace_name
                                                  : "default";
  ev.separate_pods = w.separate_pods;
  // A Compose file (the only kind of separate applications) runs in no namespace: the default
  // rule (privileged, no annotations required). A cluster-scoped object has none either: the
  // rule that matches every namespace ("*"), if any, applies to it.
  if (w.separate_pods || w.cluster_scoped) ev.namespace_name.clear();
  ev.rule = w.separate_pods ? NamespaceRule{} : MatchNamespace(policy, ev.namespace_name);
  ev.rule.pod_security = std::max(ev.rule.pod_security, namespace_pod_security);
  if (ev.rule.mode == NamespaceMode::kOff) {
    ev.verdict = Verdict::kSkip;
    ev.reasons.push_back(w.cluster_scoped ? "cluster-scoped objects are off in the policy (its \"*\" rule)"
                                          : "namespace " + ev.namespace_name + " is off in the policy");
    return ev;
  }
  ev.reasons = w.notes;
  ev.warnings = w.warnings;
  for (const auto& t : w.templates) {
    PodEvaluation pe = EvaluatePod(t, w, ev.rule, policy, wording);
    ev.patch.Extend(pe.patch);
    if (!w.separate_pods) pe.patch = JsonPatch();  // only separate applications are patched one by one
    ev.verdict = ev.pods.empty() ? pe.verdict : std::max(ev.verdict, pe.verdict);
    ev.pods.push_back(std::move(pe));
  }
  if (ev.pods.empty()) {
    ev.verdict = Verdict::kOk;
    ev.reasons.push_back("no pod templates");
  }
  // A workload one of whose pods is denied is not patched at all: /mutate sends no patch then,
  // and the audit shows what /mutate would do. Separate applications are patched one by one.
  if (ev.verdict == Verdict::kDeny && !ev.separate_pods) ev.patch = JsonPatch();
  return ev;
}

}  // namespace shmguard
