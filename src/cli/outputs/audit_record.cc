// RecordOf and RecordsOf: an Evaluation as the audit's typed records; the verdicts' names and the
// summary's counts.
#include "cli/outputs/audit_record.h"

#include <algorithm>

#include "core/values/json_node.h"

namespace shmguard::cli {

using nlohmann::json;

const char* AuditVerdictName(AuditVerdict v) {
  switch (v) {
    case AuditVerdict::kOk: return "ok";
    case AuditVerdict::kPatch: return "patch";
    case AuditVerdict::kDeny: return "deny";
    case AuditVerdict::kSkip: return "skip";
    case AuditVerdict::kError: return "error";
  }
  return "error";
}

AuditVerdict AuditVerdictOf(Verdict v) {
  switch (v) {
    case Verdict::kOk: return AuditVerdict::kOk;
    case Verdict::kPatch: return AuditVerdict::kPatch;
    case Verdict::kDeny: return AuditVerdict::kDeny;
    case Verdict::kSkip: return AuditVerdict::kSkip;
  }
  return AuditVerdict::kError;
}

void AuditSummary::Add(const AuditRecord& r) {
  ++verdicts[r.verdict];
  for (const auto& f : r.findings) {
    ++checks[std::string(f.finding.id())];
    if (f.finding.suppressed) ++suppressed;
  }
  if (r.verdict != AuditVerdict::kError) ++objects;
  if (!r.workload && r.verdict == AuditVerdict::kSkip) {
    ++non_workloads;
    ++skipped_kinds[r.kind.empty() ? "(no kind)" : r.kind];
  }
}

int AuditSummary::Count(AuditVerdict v) const {
  auto it = verdicts.find(v);
  return it == verdicts.end() ? 0 : it->second;
}

std::optional<Severity> WorstSeverity(const AuditRecord& r) {
  std::optional<Severity> worst;
  for (const auto& f : r.findings) {
    if (!f.finding.suppressed && (!worst || f.finding.severity > *worst)) worst = f.finding.severity;
  }
  return worst;
}

bool PrefixPods(const AuditRecord& r) { return r.pods.size() > 1; }

std::string ObjectName(const AuditRecord& r) {
  if (!r.service.empty()) return "service " + r.service;
  if (r.kind.empty()) return "";
  return r.kind + " " + (r.namespace_name.empty() ? "" : r.namespace_name + "/") + r.name;
}

AuditRecord UnreadableRecord(const std::string& file, const Error& e, int line) {
  AuditRecord r;
  r.file = file;
  r.verdict = AuditVerdict::kError;
  r.workload = true;
  r.findings.push_back({Finding(Check::kDocumentUnreadable).Val("error", e.ToString()), line, line > 0 ? 1 : 0});
  return r;
}

namespace {

// The names of the containers of the pod spec at `spec_pointer` of `object` (a Compose
// service's: none).
std::vector<std::string> ContainerNames(JsonNode object, const std::string& spec_pointer) {
  std::vector<std::string> names;
  for (JsonNode c : FollowPointer(object, spec_pointer).Find("containers").Items()) {
    names.emplace_back(c.StringMember("name"));
  }
  return names;
}

// The record of `ev`, evaluated from `object` (whose apiVersion it takes when `ev` has none); with
// `only`, the record of that pod alone (a Compose service, judged on its own): its verdict, patch
// and the service's name. With several pods and no `only`, each pod's changes start with its
// label ("replicatedJob workers: ...").
// REQUIRES: `only` < ev.pods.size().
AuditRecord RecordOf(const Evaluation& ev, JsonNode object, std::optional<size_t> only) {
  AuditRecord r;
  r.api_version = ev.api_version.empty() ? std::string(object.StringMember("apiVersion")) : ev.api_version;
  r.kind = ev.kind;
  r.namespace_name = ev.namespace_name;
  r.name = ev.name;
  r.verdict = AuditVerdictOf(ev.verdict);
  r.workload = ev.workload;
  if (ev.workload) {
    const std::vector<std::string> candidates = WorkloadCandidates(object);
    if (!candidates.empty()) r.workload_key = candidates.front();
  }
  for (const auto& f : ev.findings) r.findings.push_back({f});
  const bool prefix = ev.pods.size() > 1 && !only;
  for (size_t i = 0; i < ev.pods.size(); ++i) {
    const PodEvaluation& p = ev.pods[i];
    if (only && i != *only) continue;
    for (const auto& f : p.findings) r.findings.push_back({f});
    for (const auto& text : p.changes) r.changes.push_back(prefix ? p.label + ": " + text : text);
    r.required_bytes = std::max(r.required_bytes, p.required_bytes);
    r.pods.push_back({p.path, p.label, p.verdict, p.current_shm, p.current_bytes, p.required_bytes, p.estimated,
                      p.memory_limit_bytes, ContainerNames(object, p.path)});
    if (r.current_shm.empty() || p.plan) r.current_shm = p.current_shm;
    if (p.memory_limit_bytes && (!r.memory_limit_bytes || p.plan)) r.memory_limit_bytes = p.memory_limit_bytes;
  }
  if (!only) {
    r.patch = ev.patch;
    return r;
  }
  const PodEvaluation& p = ev.pods[*only];
  r.service = p.label.substr(p.label.find(' ') + 1);
  r.verdict = AuditVerdictOf(p.verdict);
  r.patch = p.patch;
  return r;
}

}  // namespace

std::vector<AuditRecord> RecordsOf(JsonNode object, const Policy& policy, const EvaluateOptions& eval) {
  Evaluation ev = Evaluate(object, policy, eval);
  std::vector<AuditRecord> records;
  if (!ev.separate_pods || ev.pods.empty()) {
    records.push_back(RecordOf(ev, object, std::nullopt));
    return records;
  }
  for (size_t i = 0; i < ev.pods.size(); ++i) records.push_back(RecordOf(ev, object, i));
  return records;
}

}  // namespace shmguard::cli
