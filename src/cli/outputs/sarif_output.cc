// -o sarif: SARIF 2.1.0 (OASIS, sarif-v2.1.0-os), as code-scanning views read it: the catalogue
// as the driver's rules (their help names each check's section of docs/checks.md, and with
// --docs-url their helpUri links to it), one result
// per finding with its file, line and column and a fingerprint that survives edits elsewhere in
// the file, exempted findings with a suppression.
#include <nlohmann/json.hpp>

#include "cli/outputs/audit_output.h"
#include "io/words/finding_text.h"
#include "io/words/version.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

const char* Level(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "note";
  }
  return "note";
}

// A file path as a SARIF artifact URI: relative paths stay relative (to %SRCROOT%, the
// directory the audit ran in), with each byte outside RFC 3986's unreserved set and "/"
// percent-encoded.
std::string Uri(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Where a file is: a relative path relative to %SRCROOT% (where the audit ran), an absolute one
// as a file: URI, stdin as "stdin".
json ArtifactLocation(const std::string& file) {
  if (file == "-") return {{"uri", "stdin"}};
  if (!file.empty() && file[0] == '/') return {{"uri", "file://" + Uri(file)}};
  return {{"uri", Uri(file)}, {"uriBaseId", "%SRCROOT%"}};
}

class SarifPrinter : public AuditPrinter {
 public:
  // The log is written as results come, not held: the rules and everything else are known
  // before the first result (they are the catalogue), so only the results stream. The text is
  // the one dump(2) of the whole log would give, byte for byte.
  SarifPrinter(std::ostream& out, std::string docs_url) : out_(out), docs_url_(std::move(docs_url)) {
    const std::string text = Log().dump(2, ' ', false, json::error_handler_t::replace);
    const std::string mark = "\"" + std::string(kResultsMark) + "\"";
    const size_t at = text.find(mark);
    head_ = text.substr(0, at);
    tail_ = text.substr(at + mark.size());
  }
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      const bool prefix = PrefixPods(r);
      const std::string object = ObjectName(r);
      for (const auto& f : r.findings) {
        const Finding& x = f.finding;
        json location = {{"physicalLocation", {{"artifactLocation", ArtifactLocation(r.file)}}}};
        // Not located (a file that cannot be read): the file as a whole, from its first line.
        location["physicalLocation"]["region"] = {{"startLine", std::max(1, f.line)},
                                                  {"startColumn", std::max(1, f.column)}};
        if (!object.empty()) {
          location["logicalLocations"] =
              json::array({{{"fullyQualifiedName", object + (x.pod.empty() ? "" : " " + x.pod)}, {"kind", "object"}}});
        }
        json props = FindingToJson(f, prefix);
        json result = {
            {"ruleId", x.id()},
            {"ruleIndex", RuleIndex(x.check)},
            {"level", Level(x.severity)},
            {"message", {{"text", io::FindingLine(x, prefix)}}},
            {"locations", json::array({location})},
            // The same finding of the same object, wherever its line moves.
            {"partialFingerprints",
             {{"shmguardFinding/v1", object + "|" + x.pod + "|" + x.pointer + "|" + std::string(x.id())}}},
            {"properties",
             {{"object", object}, {"pointer", x.pointer}, {"numbers", props["numbers"]}, {"values", props["values"]}}}};
        if (x.suppressed) {
          result["suppressions"] =
              json::array({{{"kind", "external"},
                            {"justification", "exempted by shmguard.io/ignore, --ignore or the policy's ignore"}}});
        }
        Write(result);
      }
    }
  }
  void Finish(const AuditSummary&) override {
    out_ << head_ << (results_ == 0 ? "[]" : "\n" + std::string(kResultsIndent - 2, ' ') + "]") << tail_ << "\n";
  }

 private:
  static constexpr const char* kResultsMark = "@@shmguard-sarif-results@@";
  // runs[0].results' items are four levels deep in the log: 8 spaces at dump(2).
  static constexpr int kResultsIndent = 8;

  void Write(const json& result) {
    std::string text = result.dump(2, ' ', false, json::error_handler_t::replace);
    if (results_++ == 0) {
      out_ << head_ << "[\n";
    } else {
      out_ << ",\n";
    }
    const std::string indent(kResultsIndent, ' ');
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
      out_ << indent << std::string_view(text).substr(start, nl + 1 - start);
    }
    out_ << indent << std::string_view(text).substr(start);
    head_.clear();
  }

  // The log with a mark where the results go.
  json Log() const {
    json rules = json::array();
    for (const CheckInfo& c : Catalogue()) {
      rules.push_back({{"id", c.id},
                       {"name", Name(c.id)},
                       {"shortDescription", {{"text", std::string(c.title) + "."}}},
                       {"fullDescription",
                        {{"text", std::string(c.title) + ". Default severity: " + SeverityName(c.severity) + "."}}},
                       {"help",
                        {{"text", "shmguard's docs/checks.md, section " + std::string(c.id) +
                                      ", says when it is reported, what it means and what to change."}}},
                       {"defaultConfiguration", {{"level", Level(c.severity)}}}});
      if (!docs_url_.empty()) rules.back()["helpUri"] = docs_url_ + "#" + std::string(c.id);
    }
    json driver = {{"name", "shmguard"}, {"semanticVersion", io::Version()}, {"rules", rules}};
    if (!docs_url_.empty()) driver["informationUri"] = docs_url_;
    json sarif = {
        {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
        {"version", "2.1.0"},
        {"runs",
         json::array({{{"tool", {{"driver", driver}}},
                       {"originalUriBaseIds", {{"%SRCROOT%", {{"description", {{"text", "where the audit ran"}}}}}}},
                       {"columnKind", "unicodeCodePoints"},
                       {"results", kResultsMark}}})}};
    return sarif;
  }
  // The rules are the catalogue in its order, which is the enum's (checks.cc asserts it).
  static int RuleIndex(Check c) { return static_cast<int>(c); }
  // "shm-over-memory-limit" -> "ShmOverMemoryLimit" (SARIF's rule names are identifiers).
  static std::string Name(std::string_view id) {
    std::string out;
    bool upper = true;
    for (char c : id) {
      if (c == '-') {
        upper = true;
        continue;
      }
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
    return out;
  }
  std::ostream& out_;
  const std::string docs_url_;
  std::string head_, tail_;  // the log before and after the results; head_ is cleared once written
  size_t results_ = 0;
};

}  // namespace

std::unique_ptr<AuditPrinter> MakeSarifPrinter(std::ostream& out, const std::string& docs_url) {
  return std::make_unique<SarifPrinter>(out, docs_url);
}

}  // namespace shmguard::cli
