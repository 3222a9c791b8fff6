// The audit printers: table, json, yaml, patched (the tools' formats have files of their own).
#include "cli/outputs/audit_output.h"

#include <algorithm>
#include <iomanip>

#include "core/values/quantity.h"
#include "io/formats/yaml_emit.h"
#include "io/words/finding_text.h"
#include "io/words/printable.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

// A cell cut to `width` characters, the cut marked with "~": a name keeps its head, a location
// (file:doc) its tail, where the file name and document index are.
// A byte of `s` where a character starts (not a UTF-8 continuation byte).
bool StartsCharacter(const std::string& s, size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80; }

// A table cell: printable (io::Printable), cut to `width` bytes at a character with "~" at the
// cut. TailCell keeps the end instead (a path's file name).
std::string Cell(const std::string& text, size_t width) {
  std::string s = io::Printable(text);
  if (s.size() <= width) return s;
  size_t end = width - 1;
  while (end > 0 && !StartsCharacter(s, end)) --end;
  return s.substr(0, end) + "~";
}
std::string TailCell(const std::string& text, size_t width) {
  std::string s = io::Printable(text);
  if (s.size() <= width) return s;
  size_t begin = s.size() - (width - 1);
  while (begin < s.size() && !StartsCharacter(s, begin)) ++begin;
  return "~" + s.substr(begin);
}

std::string Indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string line = text.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    out += prefix + line + "\n";
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  return out;
}

class TablePrinter : public AuditPrinter {
 public:
  explicit TablePrinter(std::ostream& out) : out_(out) {
    out_ << std::left << std::setw(34) << "FILE:DOC"
         << " " << std::setw(44) << "OBJECT"
         << " " << std::setw(7) << "VERDICT"
         << " " << std::setw(9) << "REQUIRED"
         << " " << std::setw(9) << "LIMIT"
         << " "
         << "CURRENT /dev/shm"
         << "\n";
  }
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      if (!r.workload && r.verdict == AuditVerdict::kSkip) continue;  // counted in the summary
      std::string where = r.file + ":" + std::to_string(r.document);
      if (r.item) where.append("[").append(std::to_string(*r.item)).append("]");
      std::string object = ObjectName(r);
      if (object.empty()) object = "-";
      out_ << std::left << std::setw(34) << TailCell(where, 34) << " " << std::setw(44) << Cell(object, 44) << " "
           << std::setw(7) << AuditVerdictName(r.verdict) << " " << std::setw(9)
           << (r.required_bytes > 0 ? FormatBytes(r.required_bytes) : "-") << " " << std::setw(9)
           << (r.memory_limit_bytes ? FormatBytes(*r.memory_limit_bytes) : "-") << " "
           << (r.current_shm.empty() ? "-" : io::Printable(r.current_shm)) << "\n";
      if (r.verdict == AuditVerdict::kOk && r.findings.size() == 1 &&
          r.findings[0].finding.severity == Severity::kInfo && r.changes.empty() && r.required_bytes == 0) {
        continue;  // unannotated and fine: one line is enough
      }
      // A mark per severity: "  " info, "! " warning, "x " error, "~ " exempted.
      const bool prefix = PrefixPods(r);
      for (const auto& f : r.findings) {
        const Finding& x = f.finding;
        const char* mark = x.suppressed                       ? "~ "
                           : x.severity == Severity::kError   ? "x "
                           : x.severity == Severity::kWarning ? "! "
                                                              : "  ";
        out_ << "  " << mark << "[" << x.id() << "] " << (x.suppressed ? "(exempted) " : "")
             << io::Printable(io::FindingLine(x, prefix)) << "\n";
      }
      for (const auto& c : r.changes) out_ << "    + " << io::Printable(c) << "\n";
    }
  }
  void Finish(const AuditSummary& s) override {
    out_ << "\n" << s.objects << " objects in " << s.files << " files: ";
    for (AuditVerdict v : kAuditVerdicts) {
      out_ << (v == AuditVerdict::kOk ? "" : ", ") << s.Count(v) << " " << AuditVerdictName(v);
    }
    if (!s.skipped_kinds.empty()) {
      out_ << " (" << s.non_workloads << " non-workload documents skipped:";
      bool first = true;
      for (const auto& [kind, n] : s.skipped_kinds) {
        out_ << (first ? " " : ", ") << kind << " ×" << n;
        first = false;
      }
      out_ << ")";
    }
    out_ << "\n";
    if (!s.checks.empty()) {
      out_ << "findings by check:";
      for (const auto& [id, n] : s.checks) out_ << " " << id << " ×" << n;
      if (s.suppressed) out_ << " (" << s.suppressed << " exempted)";
      out_ << "\n";
    }
  }

 private:
  std::ostream& out_;
};

class JsonPrinter : public AuditPrinter {
 public:
  explicit JsonPrinter(std::ostream& out) : out_(out) { out_ << "{\n  \"records\": ["; }
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      // The patch goes in as the text the webhook would send, after the other members.
      std::string record = RecordToJson(r, false).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
      record.insert(record.size() - 2, ",\n  \"patch\": " + r.patch.Text());
      record = Indent(record, "    ");
      record.pop_back();  // the comma goes after the closing brace
      out_ << (first_ ? "\n" : ",\n") << record;
      first_ = false;
    }
  }
  void Finish(const AuditSummary& s) override {
    out_ << (first_ ? "],\n" : "\n  ],\n") << "  \"summary\": " << SummaryToJson(s).dump() << "\n}\n";
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

class YamlPrinter : public AuditPrinter {
 public:
  explicit YamlPrinter(std::ostream& out) : out_(out) {}
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      if (first_) out_ << "records:\n";
      first_ = false;
      out_ << io::JsonToYaml(json::array({RecordToJson(r, true)}));
    }
  }
  void Finish(const AuditSummary& s) override {
    if (first_) out_ << "records: []\n";
    out_ << "summary:\n" << Indent(io::JsonToYaml(SummaryToJson(s)), "  ");
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// "# shmguard: shm-below-need, ipc-lock-missing (docs/checks.md)": what the patch of a YAML
// document answers, the warnings and errors that are not exempted.
std::string PatchedComment(const std::vector<AuditRecord>& records) {
  std::vector<std::string> ids;
  for (const auto& r : records) {
    for (const auto& f : r.findings) {
      std::string id(f.finding.id());
      if (!f.finding.suppressed && f.finding.severity != Severity::kInfo &&
          std::find(ids.begin(), ids.end(), id) == ids.end()) {
        ids.push_back(id);
      }
    }
  }
  if (ids.empty()) return "";
  std::string out = "# shmguard:";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : " ") + ids[i];
  return out + " (docs/checks.md)\n";
}

class PatchedPrinter : public AuditPrinter {
 public:
  explicit PatchedPrinter(std::ostream& out) : out_(out) {}
  void Document(const io::Document& d, const std::vector<AuditRecord>& records) override {
    if (!d.object && !d.error) return;  // an unreadable file: nothing to print
    bool patched = false;
    for (const auto& r : records) patched |= !r.patch.empty();
    std::string text;
    if (!patched || !d.object) {
      text = d.text;
      // The separator line stays with its document; add one where the source had none.
      if (!first_ && text.rfind("---", 0) != 0) out_ << "---\n";
    } else {
      json object = d.object->ToJson();
      for (const auto& r : records) {
        if (r.patch.empty()) continue;
        if (r.item) {
          object["items"][*r.item] = object["items"][*r.item].patch(r.patch.ToJson());
        } else {
          object = object.patch(r.patch.ToJson());
        }
      }
      if (!first_) out_ << "---\n";
      text = d.is_json ? object.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                       : PatchedComment(records) + io::JsonToYaml(object);
    }
    out_ << text;
    if (!text.empty() && text.back() != '\n') out_ << "\n";
    first_ = false;
  }
  void Finish(const AuditSummary&) override {}

 private:
  std::ostream& out_;
  bool first_ = true;
};

json PodToJson(const AuditPod& p) {
  return {{"path", p.path},
          {"label", p.label},
          {"verdict", VerdictName(p.verdict)},
          {"current_shm", p.current_shm},
          {"required_bytes", p.required_bytes > 0 ? json(p.required_bytes) : json()},
          {"required", p.required_bytes > 0 ? json(FormatBytes(p.required_bytes)) : json()},
          {"estimated", p.estimated},
          {"memory_limit_bytes", p.memory_limit_bytes ? json(*p.memory_limit_bytes) : json()}};
}

}  // namespace

json FindingToJson(const AuditFinding& f, bool prefix_pod) {
  const Finding& x = f.finding;
  json numbers = json::object(), values = json::object();
  for (const auto& [name, v] : x.numbers) numbers[std::string(name)] = v;
  for (const auto& [name, v] : x.values) values[std::string(name)] = v;
  json j = {{"id", x.id()},
            {"severity", SeverityName(x.severity)},
            {"pod", x.pod},
            {"pointer", x.pointer},
            {"line", f.line > 0 ? json(f.line) : json()},
            {"column", f.column > 0 ? json(f.column) : json()},
            {"message", io::FindingLine(x, prefix_pod)},
            {"numbers", numbers},
            {"values", values},
            {"suppressed", x.suppressed}};
  return j;
}

json RecordToJson(const AuditRecord& r, bool with_patch) {
  json j = {{"file", r.file},
            {"document", r.document},
            {"line", r.line},
            {"apiVersion", r.api_version},
            {"kind", r.kind},
            {"namespace", r.namespace_name},
            {"name", r.name},
            {"verdict", AuditVerdictName(r.verdict)},
            {"findings", json::array()},
            {"changes", r.changes},
            {"current_shm", r.current_shm},
            {"required_bytes", r.required_bytes},
            {"required", r.required_bytes > 0 ? json(FormatBytes(r.required_bytes)) : json()},
            {"memory_limit_bytes", r.memory_limit_bytes ? json(*r.memory_limit_bytes) : json()},
            {"pods", json::array()}};
  for (const auto& p : r.pods) j["pods"].push_back(PodToJson(p));
  for (const auto& f : r.findings) j["findings"].push_back(FindingToJson(f, PrefixPods(r)));
  if (with_patch) j["patch"] = r.patch.ToJson();
  if (r.item) j["item"] = *r.item;
  if (!r.service.empty()) j["service"] = r.service;
  return j;
}

json SummaryToJson(const AuditSummary& s) {
  json j = {{"files", s.files}, {"documents", s.documents}, {"objects", s.objects}, {"non_workloads", s.non_workloads}};
  for (AuditVerdict v : kAuditVerdicts) j[AuditVerdictName(v)] = s.Count(v);
  j["checks"] = s.checks;
  j["suppressed"] = s.suppressed;
  return j;
}

std::unique_ptr<AuditPrinter> MakeAuditPrinter(const AuditOptions& options, std::ostream& out) {
  switch (options.output) {
    case AuditFormat::kJson: return std::make_unique<JsonPrinter>(out);
    case AuditFormat::kYaml: return std::make_unique<YamlPrinter>(out);
    case AuditFormat::kPatched: return std::make_unique<PatchedPrinter>(out);
    case AuditFormat::kSarif: return MakeSarifPrinter(out, options.docs_url);
    case AuditFormat::kJunit: return MakeJunitPrinter(out, options.fail_on);
    case AuditFormat::kGithub: return MakeGithubPrinter(out);
    case AuditFormat::kPolicyReport: return MakePolicyReportPrinter(out, options.report_api);
    case AuditFormat::kTable: break;
  }
  return std::make_unique<TablePrinter>(out);
}

}  // namespace shmguard::cli
