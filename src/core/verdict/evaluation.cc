// Evaluate: discovery, the namespace's rule, the exemptions, and every pod template's verdict
// (EvaluatePod) gathered into the workload's verdict and patch.
#include "core/verdict/evaluation.h"

#include <algorithm>
#include <iterator>

#include "core/verdict/internal/ignore_annotation.h"
#include "core/verdict/internal/pod_evaluation.h"

namespace shmguard {

using verdict::EvaluatePod;
using verdict::ReadIgnore;
namespace {

// An evaluation stopped because its work budget was spent: review-over-budget, and nothing of
// what was found before it (a partial answer would patch part of a workload).
Evaluation OverBudget(Evaluation ev) {
  ev.findings.clear();
  ev.pods.clear();
  ev.patch = JsonPatch();
  ev.findings.push_back(Finding(Check::kReviewOverBudget, ""));
  ev.verdict = Verdict::kDeny;
  return ev;
}

// Marks the object's own findings that are exempted; true while one of them is an error
// that is not.
bool SettleObject(std::vector<Finding>& findings, const std::vector<Check>& exempt) {
  bool error = false;
  for (auto& f : findings) {
    f.suppressed = std::find(exempt.begin(), exempt.end(), f.check) != exempt.end();
    error = error || (!f.suppressed && f.severity == Severity::kError);
  }
  return error;
}

}  // namespace

std::vector<Finding> Evaluation::AllFindings() const {
  std::vector<Finding> out = findings;
  for (const auto& p : pods) out.insert(out.end(), p.findings.begin(), p.findings.end());
  return out;
}

int64_t Evaluation::RequiredBytes() const {
  int64_t out = 0;
  for (const auto& p : pods) {
    out = std::max(out, p.required_bytes);
  }
  return out;
}

namespace {

// The object's workload; in policy mode, as the policies see it: no server sized from its launch,
// and a controller's pods patched when they are created, not in its template.
Result<Workload> ReadWorkload(JsonNode object, const EvaluateOptions& options) {
  auto workload = FindPodTemplates(object, options.runtimes);
  if (!workload || !options.policy_mode) return workload;
  for (PodTemplate& t : workload->templates) {
    t.servers_sized = false;
    if (!workload->is_pod && !workload->separate_pods && t.patchable) {
      t.patchable = false;
      t.pods_patched_at_creation = true;
    }
  }
  return workload;
}

// An object that is not a workload (skip), or one that cannot be read (object-invalid).
Evaluation NotRead(JsonNode object, const Error& e, const EvaluateOptions& options) {
  Evaluation ev;
  ev.kind = object.StringMember("kind");
  if (e.code == Code::kUnsupportedKind) {
    ev.verdict = Verdict::kSkip;
    if (options.detail == Detail::kAll) {
      ev.findings.push_back(Finding(Check::kNotAWorkload, "/kind").Val("error", e.message));
    }
    return ev;
  }
  ev.findings.push_back(
      Finding(Check::kObjectInvalid, e.where.pointer).Val("where", e.where.ToString()).Val("error", e.message));
  ev.verdict = SettleObject(ev.findings, options.exemptions.checks) ? Verdict::kDeny : Verdict::kOk;
  return ev;
}

// The workload's names, its namespace and the rule of it. A Compose file (the only kind of
// separate applications) runs in no namespace: the default rule (privileged, no annotations
// required). A cluster-scoped object has none either: the rule that matches every namespace
// ("*"), if any, applies to it.
Evaluation Placed(const Workload& w, const Policy& policy, const EvaluateOptions& options) {
  Evaluation ev;
  ev.workload = true;
  ev.api_version = w.api_version;
  ev.kind = w.kind;
  ev.name = w.name;
  ev.namespace_name = !options.namespace_name.empty() ? std::string(options.namespace_name)
                      : !w.namespace_name.empty()     ? w.namespace_name
                                                      : "default";
  ev.separate_pods = w.separate_pods;
  if (w.separate_pods || w.cluster_scoped) ev.namespace_name.clear();
  ev.rule = w.separate_pods ? NamespaceRule{} : MatchNamespace(policy, ev.namespace_name);
  ev.rule.pod_security = std::max(ev.rule.pod_security, options.namespace_pod_security);
  return ev;
}

// What one template's pods are evaluated with: the checks exempted for them (`base`, and the
// template's own shmguard.io/ignore, which replaces the object's) and the profile of their
// workload. The template's ignore annotation's findings go to `ignore_findings`.
PodContext ContextFor(const PodTemplate& t, JsonNode object, const Evaluation& ev, const std::vector<Check>& base,
                      const std::vector<Check>& object_exempt, const EvaluateOptions& options,
                      std::vector<Finding>& ignore_findings) {
  PodContext ctx{options.detail, object_exempt};
  if (options.observations && options.observations->size() > 0 && !ev.separate_pods && !options.policy_mode) {
    auto profile = t.annotations.find(kProfileAnnotation);  // the template's, else the workload's
    ctx.observed = options.observations->Find(
        ev.namespace_name, WorkloadCandidates(object, profile != t.annotations.end() ? profile->second : JsonNode()));
  }
  auto it = t.annotations.find(kIgnoreAnnotation);
  if (it != t.annotations.end()) {
    // The template's value wins over the workload's, as for every shmguard.io/ annotation.
    ctx.exempt = base;
    auto own_ignore = ReadIgnore(it->second, t.AnnotationPointer(kIgnoreAnnotation), ignore_findings);
    ctx.exempt.insert(ctx.exempt.end(), own_ignore.begin(), own_ignore.end());
  }
  return ctx;
}

}  // namespace

Evaluation Evaluate(JsonNode object, const Policy& policy, const EvaluateOptions& options) {
  const Detail detail = options.detail;
  auto workload = ReadWorkload(object, options);
  if (!workload) return NotRead(object, workload.error(), options);
  Workload& w = *workload;
  Evaluation ev = Placed(w, policy, options);
  if (ev.rule.mode == NamespaceMode::kOff) {
    ev.verdict = Verdict::kSkip;
    if (detail == Detail::kAll) {
      ev.findings.push_back(Finding(Check::kNamespaceOff, "/metadata")
                                .Val("namespace", ev.namespace_name)
                                .Num("cluster_scoped", w.cluster_scoped ? 1 : 0));
    }
    return ev;
  }
  // Exempted for every pod: the caller's and the rule's, and the object's own annotation, which a
  // template's own replaces.
  std::vector<Check> base = options.exemptions.checks;
  base.insert(base.end(), ev.rule.ignore.begin(), ev.rule.ignore.end());
  std::vector<Check> exempt = base;
  std::vector<Finding> own = w.findings;
  if (JsonNode ignore = object.Find("metadata").Find("annotations").Find(kIgnoreAnnotation)) {
    std::vector<Check> object_ignore = ReadIgnore(ignore, "/metadata/annotations/shmguard.io~1ignore", own);
    exempt.insert(exempt.end(), object_ignore.begin(), object_ignore.end());
  }
  for (auto& f : own) {
    if (detail == Detail::kAll || f.severity != Severity::kInfo) ev.findings.push_back(std::move(f));
  }
  bool object_error = SettleObject(ev.findings, exempt);
  // Claims are read for every pod that uses some: one the input does not hold is unknown.
  if (!w.separate_pods && !options.policy_mode) {
    static const ClaimIndex kNone;
    const ClaimIndex& claims = options.claims ? *options.claims : kNone;
    for (auto& t : w.templates) ResolveClaimGpus(t, ev.namespace_name, claims, policy.gpu_device_classes);
  }
  if (options.config_maps && !options.policy_mode) {
    for (auto& t : w.templates) ResolveConfigMaps(t, ev.namespace_name, *options.config_maps);
  }
  for (auto& t : w.templates) t.budget = options.budget;
  for (const auto& t : w.templates) {
    if (options.budget && options.budget->Exhausted()) return OverBudget(std::move(ev));
    std::vector<Finding> ignore_findings;
    const PodContext ctx = ContextFor(t, object, ev, base, exempt, options, ignore_findings);
    PodEvaluation pe = EvaluatePod({t, w, ev.rule, policy, ctx});
    for (auto& f : ignore_findings) f.pod = pe.label;
    pe.findings.insert(pe.findings.begin(), std::make_move_iterator(ignore_findings.begin()),
                       std::make_move_iterator(ignore_findings.end()));
    ev.patch.Extend(pe.patch);
    if (!w.separate_pods) pe.patch = JsonPatch();  // only separate applications are patched one by one
    ev.verdict = ev.pods.empty() ? pe.verdict : std::max(ev.verdict, pe.verdict);
    ev.pods.push_back(std::move(pe));
  }
  if (options.budget && options.budget->Exhausted()) return OverBudget(std::move(ev));
  if (ev.pods.empty()) {
    ev.verdict = Verdict::kOk;
    if (detail == Detail::kAll) ev.findings.push_back(Finding(Check::kNoPodTemplates, "/spec"));
  }
  if (object_error) ev.verdict = Verdict::kDeny;
  // A workload one of whose pods is denied is not patched at all: /mutate sends no patch then,
  // and the audit shows what /mutate would do. Separate applications are patched one by one.
  if (ev.verdict == Verdict::kDeny && !ev.separate_pods) ev.patch = JsonPatch();
  return ev;
}

}  // namespace shmguard
