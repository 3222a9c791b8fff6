// -o github: GitHub Actions workflow commands, one per error or warning that is not exempted:
//   ::error file=manifests/job.yaml,line=12,col=7,title=shm-over-memory-limit::memory limit ...
// (docs.github.com, "Workflow commands for GitHub Actions": a property's "%", CR, LF, ":" and
// "," and a message's "%", CR and LF are percent-encoded).
#include "cli/outputs/audit_output.h"
#include "io/words/finding_text.h"
#include "io/words/printable.h"

namespace shmguard::cli {
namespace {

// A property's or message's text: a message printable (io::Printable: no terminal escapes), a
// property valid UTF-8, then percent-encoded as the runner reads it.
std::string Escape(const std::string& text, bool property) {
  const std::string s = property ? io::ValidUtf8(text) : io::Printable(text);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      case ':': out += property ? "%3A" : ":"; break;
      case ',': out += property ? "%2C" : ","; break;
      default:
        // A property (file=) holds no control byte raw: %XX, as the toolkit writes its own.
        if (property && (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)) {
          static constexpr char kHex[] = "0123456789ABCDEF";
          out += '%';
          out += kHex[static_cast<unsigned char>(c) >> 4];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out;
}

class GithubPrinter : public AuditPrinter {
 public:
  explicit GithubPrinter(std::ostream& out) : out_(out) {}
  void Document(const io::Document&, const std::vector<AuditRecord>& records) override {
    for (const auto& r : records) {
      const bool prefix = PrefixPods(r);
      const std::string object = ObjectName(r);
      for (const auto& f : r.findings) {
        const Finding& x = f.finding;
        if (x.suppressed || x.severity == Severity::kInfo) continue;
        out_ << "::" << (x.severity == Severity::kError ? "error" : "warning") << " file=" << Escape(r.file, true);
        if (f.line > 0) out_ << ",line=" << f.line << ",col=" << f.column;
        out_ << ",title=" << Escape(std::string(x.id()), true)
             << "::" << Escape((object.empty() ? "" : object + ": ") + io::FindingLine(x, prefix), false) << "\n";
      }
    }
  }
  void Finish(const AuditSummary&) override {}

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<AuditPrinter> MakeGithubPrinter(std::ostream& out) { return std::make_unique<GithubPrinter>(out); }

}  // namespace shmguard::cli
