// ReportJson: the audit's records as namespaces, workloads and pod templates.
#include "cli/report/report_model.h"

#include <algorithm>
#include <map>

#include "io/words/finding_text.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

int Weight(AuditVerdict v) {
  switch (v) {
    case AuditVerdict::kDeny: return 4;
    case AuditVerdict::kError: return 3;
    case AuditVerdict::kPatch: return 2;
    case AuditVerdict::kOk: return 1;
    case AuditVerdict::kSkip: return 0;
  }
  return 0;
}

json Bytes(const std::optional<int64_t>& b) { return b ? json(*b) : json(); }

// The finding of `check` about `pod` in `r`, or nullptr.
const Finding* FindingOf(const AuditRecord& r, const AuditPod& pod, Check check) {
  for (const auto& f : r.findings) {
    if (f.finding.check == check && (f.finding.pod == pod.label || f.finding.pod.empty())) return &f.finding;
  }
  return nullptr;
}

// The plan's terms, from its shm-plan finding; null when the pod was not planned.
json PlanOf(const AuditRecord& r, const AuditPod& pod) {
  const Finding* f = FindingOf(r, pod, Check::kShmPlan);
  if (!f) return json();
  json plan = json::object();
  for (const char* name : {"dataloader_bytes", "nccl_bytes", "server_bytes", "base_bytes", "safety_ppm", "procs",
                           "workers", "prefetch_factor", "batch_bytes", "floor_applied"}) {
    plan[name] = f->Number(name);
  }
  plan["procs_source"] = f->Value("procs_source");
  plan["server_terms"] = f->Value("server_terms");
  return plan;
}

// What the workload's pods were seen to use, from its sized-from-observation finding; null
// without a profile.
json LearnedOf(const AuditRecord& r, const AuditPod& pod) {
  const Finding* f = FindingOf(r, pod, Check::kSizedFromObservation);
  if (!f) return json();
  return {{"peakBytes", f->Number("peak_bytes")},
          {"learnedBytes", f->Number("learned_bytes")},
          {"runs", f->Number("runs")},
          {"lastObserved", f->Value("last_observed")},
          {"profile", f->Value("workload")}};
}

json FindingsOf(const AuditRecord& r, const AuditPod& pod, bool several) {
  json out = json::array();
  for (const auto& f : r.findings) {
    if (several && !f.finding.pod.empty() && f.finding.pod != pod.label) continue;
    out.push_back({{"id", f.finding.id()},
                   {"severity", SeverityName(f.finding.severity)},
                   {"suppressed", f.finding.suppressed},
                   {"message", io::FindingLine(f.finding, false)}});
  }
  return out;
}

json PodRow(const AuditRecord& r, const AuditPod& pod) {
  return {{"label", pod.label},
          {"containers", pod.containers},
          {"objects", 1},
          {"verdict", AuditVerdictName(AuditVerdictOf(pod.verdict))},
          {"current", pod.current_shm},
          {"currentBytes", Bytes(pod.current_bytes)},
          {"requiredBytes", pod.required_bytes},
          {"estimated", pod.estimated},
          {"memoryLimitBytes", Bytes(pod.memory_limit_bytes)},
          {"plan", PlanOf(r, pod)},
          {"learned", LearnedOf(r, pod)},
          {"findings", FindingsOf(r, pod, r.pods.size() > 1)}};
}

// Two rows that read alike, whatever the objects they came from.
bool Alike(const json& a, const json& b) {
  for (const char* key :
       {"label", "containers", "verdict", "current", "requiredBytes", "memoryLimitBytes", "learned"}) {
    if (a[key] != b[key]) return false;
  }
  return true;
}

// The kubectl command that applies `r`'s patch to its object; "" for a Pod (its volumes cannot
// change: the pod is recreated) and for an object without a name.
std::string CommandOf(const AuditRecord& r) {
  if (r.patch.empty() || r.kind.empty() || r.kind == "Pod" || r.name.empty()) return "";
  std::string kind = r.kind;
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string text = r.patch.Text();
  std::string quoted;
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return "kubectl" + (r.namespace_name.empty() ? std::string() : " -n " + r.namespace_name) + " patch " + kind + " " +
         r.name + " --type=json -p '" + quoted + "'";
}

}  // namespace

int VerdictRank(std::string_view name) {
  for (AuditVerdict v : kAuditVerdicts) {
    if (name == AuditVerdictName(v)) return Weight(v);
  }
  return 0;
}

json ReportJson(const std::vector<AuditRecord>& records, const AuditSummary& summary) {
  // namespace -> workload key -> workload
  std::map<std::string, std::map<std::string, json>> namespaces;
  int templates = 0;
  for (const AuditRecord& r : records) {
    if (!r.workload || r.verdict == AuditVerdict::kError) continue;
    const std::string ns = r.namespace_name.empty() ? "default" : r.namespace_name;
    const std::string key = !r.workload_key.empty() ? r.workload_key
                            : !r.service.empty()    ? "service/" + r.service
                                                    : r.kind + "/" + r.name;
    json& w = namespaces[ns][key];
    if (w.is_null()) {
      const size_t slash = key.find('/');
      w = {{"workload", key},
           {"kind", key.substr(0, slash)},
           {"name", slash == std::string::npos ? key : key.substr(slash + 1)},
           {"verdict", AuditVerdictName(r.verdict)},
           {"objects", 0},
           {"patch", json()},
           {"command", ""},
           {"pods", json::array()}};
    }
    w["objects"] = w["objects"].get<int>() + 1;
    if (Weight(r.verdict) > VerdictRank(w["verdict"].get<std::string>())) {
      w["verdict"] = AuditVerdictName(r.verdict);
    }
    if (w["patch"].is_null() && !r.patch.empty()) {
      w["patch"] = r.patch.ToJson();
      w["command"] = CommandOf(r);
    }
    for (const AuditPod& pod : r.pods) {
      json row = PodRow(r, pod);
      auto same = std::find_if(w["pods"].begin(), w["pods"].end(), [&](const json& o) { return Alike(o, row); });
      if (same != w["pods"].end()) {
        (*same)["objects"] = (*same)["objects"].get<int>() + 1;
      } else {
        w["pods"].push_back(std::move(row));
        ++templates;
      }
    }
  }
  json out = {{"namespaces", json::array()}};
  int workloads = 0;
  for (auto& [ns, by_key] : namespaces) {
    json list = json::array();
    for (auto& [key, w] : by_key) list.push_back(std::move(w));
    workloads += static_cast<int>(list.size());
    out["namespaces"].push_back({{"name", ns}, {"workloads", std::move(list)}});
  }
  json verdicts = json::object();
  for (AuditVerdict v : kAuditVerdicts) verdicts[AuditVerdictName(v)] = summary.Count(v);
  out["summary"] = {{"files", summary.files},
                    {"objects", summary.objects},
                    {"workloads", workloads},
                    {"podTemplates", templates},
                    {"errors", summary.Count(AuditVerdict::kError)},
                    {"verdicts", verdicts}};
  return out;
}

}  // namespace shmguard::cli
