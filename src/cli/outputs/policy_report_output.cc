// -o policyreport: the findings as the report objects cluster dashboards read — one report per
// namespace and one cluster report for cluster-scoped objects, as a YAML stream to
// `kubectl apply -f -`. wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport (what
// Kyverno and Policy Reporter write and read), or, with --report-api openreports,
// openreports.io/v1alpha1 Report and ClusterReport. Each object gets a result per error (fail)
// and warning (warn) finding, "skip" for an exempted one, and one "pass" when it has neither.
#include <chrono>
#include <map>

#include "cli/outputs/audit_output.h"
#include "io/formats/yaml_emit.h"
#include "io/words/finding_text.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

// "/spec/containers/0/env" -> "spec.containers[0].env": a resource's fieldPath.
std::string FieldPath(const std::string& pointer) {
  std::string out;
  size_t pos = 1;
  while (pos <= pointer.size() && !pointer.empty()) {
    size_t next = pointer.find('/', pos);
    std::string token = pointer.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + token + "]" : (out.empty() ? "" : ".") + token;
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

class PolicyReportPrinter : public AuditPrinter {
 public:
  PolicyReportPrinter(std::ostream& out, ReportApi api) : out_(out), api_(api) {
    now_ =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      if (!r.workload || !r.service.empty() || r.kind.empty() || r.verdict == AuditVerdict::kError) {
        continue;  // no Kubernetes object to report on (a Compose service, unreadable input)
      }
      json resource = {{"apiVersion", r.api_version}, {"kind", r.kind}, {"name", r.name}};
      if (!r.namespace_name.empty()) resource["namespace"] = r.namespace_name;
      auto& report = reports_[r.namespace_name];
      bool said = false;
      for (const auto& f : r.findings) {
        const Finding& x = f.finding;
        if (x.severity == Severity::kInfo) continue;
        std::string result = x.suppressed ? "skip" : x.severity == Severity::kError ? "fail" : "warn";
        json res = resource;
        if (!x.pointer.empty()) res["fieldPath"] = FieldPath(x.pointer);
        json properties = {{"pointer", x.pointer}, {"pod", x.pod}};
        for (const auto& [name, v] : x.numbers) properties[std::string(name)] = std::to_string(v);
        report.Add(Result(std::string(x.id()), result, x.severity, io::FindingLine(x, PrefixPods(r)), res, properties));
        said = said || !x.suppressed;
      }
      if (!said) {
        report.Add(Result("shmguard", "pass", Severity::kInfo,
                          std::string("/dev/shm is right (") + AuditVerdictName(r.verdict) + ")", resource,
                          json::object()));
      }
    }
  }
  void Finish(const AuditSummary&) override {
    const bool open = api_ == ReportApi::kOpenReports;
    bool first = true;
    for (const auto& [ns, pending] : reports_) {
      json summary = {{"pass", 0}, {"fail", 0}, {"warn", 0}, {"error", 0}, {"skip", 0}};
      for (const auto& [result, n] : pending.counts) summary[result] = n;
      json report = {
          {"apiVersion", open ? "openreports.io/v1alpha1" : "wgpolicyk8s.io/v1alpha2"},
          {"kind", ns.empty() ? (open ? "ClusterReport" : "ClusterPolicyReport") : (open ? "Report" : "PolicyReport")},
          {"metadata", {{"name", "shmguard"}, {"labels", {{"app.kubernetes.io/managed-by", "shmguard"}}}}},
          {"summary", summary},
          {"results", kResultsMark}};
      if (!ns.empty()) report["metadata"]["namespace"] = ns;
      if (open) report["source"] = "shmguard";
      // The report as one JsonToYaml of it would print it, its results spliced in where the mark is.
      const std::string text = io::JsonToYaml(report);
      std::string line = "results: ";
      line.append(kResultsMark).push_back('\n');
      const size_t at = text.find(line);
      out_ << (first ? "" : "---\n") << std::string_view(text).substr(0, at) << "results:\n"
           << pending.results_yaml << std::string_view(text).substr(at + line.size());
      first = false;
    }
  }

 private:
  json Result(const std::string& rule, const std::string& result, Severity severity, const std::string& message,
              const json& resource, const json& properties) const {
    json r = {{"policy", "shmguard"},
              {"rule", rule},
              {"result", result},
              {"severity", severity == Severity::kError     ? "high"
                           : severity == Severity::kWarning ? "medium"
                                                            : "info"},
              {"category", "shared memory"},
              {"source", "shmguard"},
              {"scored", true},
              {"message", message},
              {"timestamp", {{"seconds", now_}, {"nanos", 0}}},
              {"resources", json::array({resource})}};
    if (!properties.empty()) r["properties"] = properties;
    return r;
  }
  std::ostream& out_;
  ReportApi api_;
  int64_t now_ = 0;
  // A report's results as YAML sequence items, as they come: a few bytes of text where a JSON
  // tree took ten times that, and the whole input's results may land in one namespace.
  struct Pending {
    std::string results_yaml;
    std::map<std::string, int> counts;  // by result: pass, fail, warn, skip
    void Add(const json& result) {
      results_yaml += io::JsonToYaml(json::array({result}));
      ++counts[result["result"].get<std::string>()];
    }
  };
  static constexpr const char* kResultsMark = "shmguard-results-go-here";
  std::map<std::string, Pending> reports_;  // by namespace; "" for cluster-scoped objects
};

}  // namespace

std::unique_ptr<AuditPrinter> MakePolicyReportPrinter(std::ostream& out, ReportApi api) {
  return std::make_unique<PolicyReportPrinter>(out, api);
}

}  // namespace shmguard::cli
