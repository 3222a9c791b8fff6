// -o junit: JUnit XML as GitLab and Jenkins read it — a test suite per file, a test case per pod
// template (and one for an object that cannot be evaluated at all), a <failure> for each finding
// that is not exempted and reaches --fail-on (the findings that fail the audit's exit code), the
// other warnings (and exempted findings) in <system-out>.
#include <deque>
#include <map>

#include "cli/outputs/audit_output.h"
#include "io/words/finding_text.h"
#include "io/words/printable.h"

namespace shmguard::cli {
namespace {

// Text for an XML attribute or element: valid UTF-8 (stray bytes as U+FFFD: a file's name need
// not be UTF-8, an XML document must), the five predefined entities, and control characters XML
// 1.0 does not allow replaced by "?".
std::string Xml(const std::string& text) {
  const std::string s = io::ValidUtf8(text);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') ? '?' : c;
    }
  }
  return out;
}

struct Case {
  std::string name, file;
  int line = 0;
  std::vector<const AuditFinding*> failures, output;
};

class JunitPrinter : public AuditPrinter {
 public:
  JunitPrinter(std::ostream& out, Severity fail_on) : out_(out), fail_on_(fail_on) {}
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      if (!r.workload && r.verdict == AuditVerdict::kSkip) continue;  // not a workload: no test
      kept_.push_back(r);
      const AuditRecord& k = kept_.back();
      std::string object = ObjectName(k);
      if (object.empty()) object = k.file + ":" + std::to_string(k.document);
      std::vector<std::string> pods;
      for (const auto& p : k.pods) pods.push_back(p.label);
      if (pods.empty()) pods.push_back("");
      auto& suite = suites_[k.file];
      for (const auto& pod : pods) {
        Case c;
        c.name = object + (pod.empty() || !k.service.empty() ? "" : " " + pod);
        c.file = k.file;
        c.line = k.line;
        for (const auto& f : k.findings) {
          // The object's own findings go with every one of its pods.
          if (!f.finding.pod.empty() && f.finding.pod != pod && k.service.empty()) continue;
          if (!f.finding.suppressed && f.finding.severity >= fail_on_) {
            c.failures.push_back(&f);
          } else if (f.finding.suppressed || f.finding.severity != Severity::kInfo) {
            c.output.push_back(&f);
          }
        }
        suite.push_back(std::move(c));
      }
    }
  }
  void Finish(const AuditSummary&) override {
    int tests = 0, failures = 0;
    for (const auto& [file, cases] : suites_) {
      for (const auto& c : cases) {
        ++tests;
        failures += c.failures.empty() ? 0 : 1;
      }
    }
    out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         << "<testsuites name=\"shmguard audit\" tests=\"" << tests << "\" failures=\"" << failures
         << "\" errors=\"0\">\n";
    for (const auto& [file, cases] : suites_) {
      int suite_failures = 0;
      for (const auto& c : cases) suite_failures += c.failures.empty() ? 0 : 1;
      out_ << "  <testsuite name=\"" << Xml(file) << "\" tests=\"" << cases.size() << "\" failures=\"" << suite_failures
           << "\" errors=\"0\" skipped=\"0\">\n";
      for (const auto& c : cases) {
        out_ << "    <testcase classname=\"" << Xml(file) << "\" name=\"" << Xml(c.name) << "\" file=\"" << Xml(c.file)
             << "\" line=\"" << c.line << "\"";
        if (c.failures.empty() && c.output.empty()) {
          out_ << "/>\n";
          continue;
        }
        out_ << ">\n";
        for (const AuditFinding* f : c.failures) {
          const std::string text = io::FindingText(f->finding);
          out_ << "      <failure type=\"" << f->finding.id() << "\" message=\"" << Xml(text) << "\">"
               << Xml(Where(*f, c.file) + text) << "</failure>\n";
        }
        if (!c.output.empty()) {
          out_ << "      <system-out>";
          for (const AuditFinding* f : c.output) {
            out_ << Xml(std::string(f->finding.suppressed ? "exempted " : "") + SeverityName(f->finding.severity) +
                        " " + std::string(f->finding.id()) + ": " + Where(*f, c.file) + io::FindingText(f->finding))
                 << "\n";
          }
          out_ << "</system-out>\n";
        }
        out_ << "    </testcase>\n";
      }
      out_ << "  </testsuite>\n";
    }
    out_ << "</testsuites>\n";
  }

 private:
  static std::string Where(const AuditFinding& f, const std::string& file) {
    if (f.line <= 0) return "";
    return file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) + ": ";
  }
  std::ostream& out_;
  Severity fail_on_;
  std::deque<AuditRecord> kept_;  // stable addresses for the cases' pointers
  std::map<std::string, std::vector<Case>> suites_;
};

}  // namespace

std::unique_ptr<AuditPrinter> MakeJunitPrinter(std::ostream& out, Severity fail_on) {
  return std::make_unique<JunitPrinter>(out, fail_on);
}

}  // namespace shmguard::cli
