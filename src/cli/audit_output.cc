// PrintAudit: table, json, yaml, patched.
#include "cli/audit_output.h"

#include <iomanip>
#include <map>

#include "io/yaml_json.h"
#include "shmguard/quantity.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

json RecordToJson(const AuditRecord& r) {
  json j = {{"file", r.file},
            {"document", r.document},
            {"line", r.line},
            {"apiVersion", r.api_version},
            {"kind", r.kind},
            {"namespace", r.namespace_name},
            {"name", r.name},
            {"verdict", r.verdict},
            {"reasons", r.reasons},
            {"warnings", r.warnings},
            {"changes", r.changes},
            {"current_shm", r.current_shm},
            {"required_bytes", r.required_bytes},
            {"required", r.required_bytes > 0 ? json(FormatBytes(r.required_bytes)) : json()},
            {"memory_limit_bytes", r.memory_limit_bytes ? json(*r.memory_limit_bytes) : json()},
            {"pods", r.pods},
            {"patch", r.patch}};
  if (r.item) j["item"] = *r.item;
  return j;
}

json Summary(const AuditResult& result) {
  json s = {{"files", result.files}, {"documents", result.documents.size()}, {"objects", 0},
            {"ok", 0}, {"patch", 0}, {"deny", 0}, {"skip", 0}, {"error", 0}, {"non_workloads", 0}};
  for (const auto& r : result.records) {
    s[r.verdict] = s[r.verdict].get<int>() + 1;
    if (r.verdict != "error") s["objects"] = s["objects"].get<int>() + 1;
    if (!r.workload && r.verdict == "skip") s["non_workloads"] = s["non_workloads"].get<int>() + 1;
  }
  return s;
}

std::string Cell(std::string s, size_t width) {
  if (s.size() > width) s = s.substr(0, width - 1) + "~";
  return s;
}

void PrintTable(const AuditResult& result, std::ostream& out) {
  out << std::left << std::setw(34) << "FILE:DOC" << " " << std::setw(44) << "OBJECT" << " "
      << std::setw(7) << "VERDICT" << " " << std::setw(9) << "REQUIRED" << " " << std::setw(9)
      << "LIMIT" << " " << "CURRENT /dev/shm" << "\n";
  std::map<std::string, int> skipped_kinds;
  for (const auto& r : result.records) {
    if (!r.workload && r.verdict == "skip") {
      ++skipped_kinds[r.kind.empty() ? "(no kind)" : r.kind];
      continue;
    }
    std::string where = r.file + ":" + std::to_string(r.document) +
                        (r.item ? "[" + std::to_string(*r.item) + "]" : "");
    std::string object = r.kind.empty() ? "-" : r.kind + " " + r.namespace_name + "/" + r.name;
    out << std::left << std::setw(34) << Cell(where, 34) << " " << std::setw(44) << Cell(object, 44)
        << " " << std::setw(7) << r.verdict << " " << std::setw(9)
        << (r.required_bytes > 0 ? FormatBytes(r.required_bytes) : "-") << " " << std::setw(9)
        << (r.memory_limit_bytes ? FormatBytes(*r.memory_limit_bytes) : "-") << " "
        << (r.current_shm.empty() ? "-" : r.current_shm) << "\n";
    if (r.verdict == "ok" && r.reasons.size() == 1 && r.changes.empty() && r.warnings.empty() &&
        r.required_bytes == 0) {
      continue;  // unannotated and fine: one line is enough
    }
    for (const auto& reason : r.reasons) out << "    " << reason << "\n";
    for (const auto& c : r.changes) out << "    + " << c << "\n";
    for (const auto& w : r.warnings) out << "    ! " << w << "\n";
  }
  json s = Summary(result);
  out << "\n" << s["objects"].get<int>() << " objects in " << s["files"].get<int>() << " files: "
      << s["ok"].get<int>() << " ok, " << s["patch"].get<int>() << " patch, "
      << s["deny"].get<int>() << " deny, " << s["skip"].get<int>() << " skip, "
      << s["error"].get<int>() << " error";
  if (!skipped_kinds.empty()) {
    out << " (" << s["non_workloads"].get<int>() << " non-workload documents skipped:";
    bool first = true;
    for (const auto& [kind, n] : skipped_kinds) {
      out << (first ? " " : ", ") << kind << " ×" << n;
      first = false;
    }
    out << ")";
  }
  out << "\n";
}

// The documents with their patches applied; untouched documents are printed as read.
void PrintPatched(const AuditResult& result, std::ostream& out) {
  std::map<std::pair<std::string, int>, std::vector<const AuditRecord*>> by_doc;
  for (const auto& r : result.records) {
    if (!r.patch.empty()) by_doc[{r.file, r.document}].push_back(&r);
  }
  bool first = true;
  for (const auto& d : result.documents) {
    auto it = by_doc.find({d.file, d.index});
    std::string text;
    if (it == by_doc.end() || !d.object) {
      text = d.text;
      // The separator line stays with its document; add one where the source had none.
      if (!first && text.rfind("---", 0) != 0) out << "---\n";
    } else {
      json patched = *d.object;
      for (const AuditRecord* r : it->second) {
        if (r->item) {
          patched["items"][*r->item] = patched["items"][*r->item].patch(r->patch);
        } else {
          patched = patched.patch(r->patch);
        }
      }
      if (!first) out << "---\n";
      text = d.is_json ? patched.dump(2) + "\n" : io::JsonToYaml(patched);
    }
    out << text;
    if (!text.empty() && text.back() != '\n') out << "\n";
    first = false;
  }
}

}  // namespace

json AuditToJson(const AuditResult& result) {
  json records = json::array();
  for (const auto& r : result.records) records.push_back(RecordToJson(r));
  return {{"records", records}, {"summary", Summary(result)}};
}

void PrintAudit(const AuditResult& result, const std::string& format, std::ostream& out) {
  if (format == "json") {
    out << AuditToJson(result).dump(2) << "\n";
  } else if (format == "yaml") {
    out << io::JsonToYaml(AuditToJson(result));
  } else if (format == "patched") {
    PrintPatched(result, out);
  } else {
    PrintTable(result, out);
  }
}

}  // namespace shmguard::cli
