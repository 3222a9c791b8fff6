// CollectAudit and RunAudit: files -> documents -> objects (List items) -> records.
#include "cli/audit_command.h"

#include <sstream>

#include "cli/audit_output.h"
#include "shmguard/evaluation.h"
#include "shmguard/quantity.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

std::string StringAt(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

AuditRecord EvaluateRecord(const json& object, const Policy& policy) {
  AuditRecord r;
  Evaluation ev = Evaluate(object, policy);
  r.api_version = ev.api_version.empty() ? StringAt(object, "apiVersion") : ev.api_version;
  r.kind = ev.kind;
  r.namespace_name = ev.namespace_name;
  r.name = ev.name;
  r.verdict = VerdictName(ev.verdict);
  r.workload = ev.workload;
  r.reasons = ev.AllReasons();
  r.warnings = ev.AllWarnings();
  r.patch = ev.patch;
  r.required_bytes = ev.RequiredBytes();
  for (const auto& p : ev.pods) {
    for (const auto& c : p.changes) r.changes.push_back(ev.pods.size() > 1 ? p.label + ": " + c : c);
    json pod = {{"path", p.path},
                {"label", p.label},
                {"verdict", VerdictName(p.verdict)},
                {"current_shm", p.current_shm},
                {"required_bytes", p.plan ? json(p.plan->required_bytes) : json()},
                {"required", p.plan ? json(FormatBytes(p.plan->required_bytes)) : json()},
                {"memory_limit_bytes", p.memory_limit_bytes ? json(*p.memory_limit_bytes) : json()}};
    r.pods.push_back(std::move(pod));
    if (r.current_shm.empty() || p.plan) r.current_shm = p.current_shm;
    if (p.memory_limit_bytes && (!r.memory_limit_bytes || p.plan)) r.memory_limit_bytes = p.memory_limit_bytes;
  }
  return r;
}

// "PodList" items often lack apiVersion/kind (the API omits them); kubectl's "List" has them.
bool IsList(const json& obj) {
  std::string kind = StringAt(obj, "kind");
  return kind.size() >= 4 && kind.compare(kind.size() - 4, 4, "List") == 0 && obj.contains("items") &&
         obj["items"].is_array();
}

}  // namespace

AuditResult CollectAudit(const std::vector<std::string>& paths, const Policy& policy,
                         std::istream& in) {
  AuditResult result;
  std::vector<std::string> files;
  for (const auto& p : paths) {
    auto expanded = io::ExpandPaths({p});
    if (!expanded) {
      AuditRecord r;
      r.file = p;
      r.verdict = "error";
      r.reasons.push_back(expanded.error().ToString());
      result.records.push_back(std::move(r));
      continue;
    }
    files.insert(files.end(), expanded->begin(), expanded->end());
  }
  for (const auto& file : files) {
    ++result.files;
    Result<std::string> text = std::string();
    if (file == "-") {
      std::ostringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    } else {
      text = io::ReadFileText(file);
    }
    if (!text) {
      AuditRecord r;
      r.file = file;
      r.verdict = "error";
      r.reasons.push_back(text.error().ToString());
      result.records.push_back(std::move(r));
      continue;
    }
    for (auto& doc : io::ParseManifests(*text, file)) {
      if (doc.error) {
        AuditRecord r;
        r.file = file;
        r.document = doc.index;
        r.line = doc.line;
        r.verdict = "error";
        r.workload = true;
        r.reasons.push_back(doc.error->ToString());
        result.records.push_back(std::move(r));
      } else if (IsList(*doc.object)) {
        const json& list = *doc.object;
        std::string item_kind = StringAt(list, "kind");
        item_kind.resize(item_kind.size() - 4);
        for (size_t i = 0; i < list["items"].size(); ++i) {
          const json& item = list["items"][i];
          AuditRecord r;
          if (item.is_object() && !item.contains("kind") && !item_kind.empty()) {
            json filled = item;  // PodList items: the kind is in the list's name
            filled["kind"] = item_kind;
            filled["apiVersion"] = StringAt(list, "apiVersion");
            r = EvaluateRecord(filled, policy);
          } else {
            r = EvaluateRecord(item, policy);
          }
          r.file = file;
          r.document = doc.index;
          r.item = static_cast<int>(i);
          r.line = doc.line;
          result.records.push_back(std::move(r));
        }
      } else {
        AuditRecord r = EvaluateRecord(*doc.object, policy);
        r.file = file;
        r.document = doc.index;
        r.line = doc.line;
        result.records.push_back(std::move(r));
      }
      result.documents.push_back(std::move(doc));
    }
  }
  return result;
}

ExitCode RunAudit(const AuditOptions& o, const Policy& policy, std::istream& in, std::ostream& out,
                  std::ostream& err) {
  if (o.output != "table" && o.output != "json" && o.output != "yaml" && o.output != "patched") {
    err << "shmguard audit: --output must be table, json, yaml or patched, got \"" << o.output << "\"\n";
    return ExitCode::kUsage;
  }
  if (o.fail_on != "warn" && o.fail_on != "deny") {
    err << "shmguard audit: --fail-on must be warn or deny, got \"" << o.fail_on << "\"\n";
    return ExitCode::kUsage;
  }
  if (o.paths.empty()) {
    err << "shmguard audit: give at least one file, directory or - for stdin\n";
    return ExitCode::kUsage;
  }
  AuditResult result = CollectAudit(o.paths, policy, in);
  PrintAudit(result, o.output, out);
  bool unreadable = false, findings = false;
  for (const auto& r : result.records) {
    if (r.verdict == "error") {
      unreadable = true;
      err << "shmguard audit: " << r.reasons.front() << "\n";
    }
    if (r.verdict == "deny" || (o.fail_on == "warn" && r.verdict == "patch")) findings = true;
  }
  if (unreadable) return ExitCode::kUsage;
  return findings ? ExitCode::kFindings : ExitCode::kOk;
}

}  // namespace shmguard::cli
