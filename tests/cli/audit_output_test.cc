// The audit printers (table, json, yaml, patched) over examples/, fixed by golden files in
// tests/golden/ that a person read once. After an intended change, rewrite them with
// UPDATE_GOLDEN=1 and read the diff.
#include <catch2/catch.hpp>
#include <sstream>

#include "cli/audit_command.h"
#include "test_util.h"

namespace shmguard::cli {
namespace {

// `shmguard audit -o FORMAT examples/`, with the paths as a user in the repository sees them.
std::string AuditExamples(const std::string& format) {
  const std::string root = std::string(SOURCE_DIR) + "/";
  std::istringstream in;
  std::ostringstream out, err;
  AuditOptions o{{root + "examples"}, *ParseAuditFormat(format), FailOn::kDeny, 1};
  RunAudit(o, Policy{}, in, out, err);
  std::string text = out.str();
  for (size_t at = text.find(root); at != std::string::npos; at = text.find(root, at)) text.erase(at, root.size());
  return text;
}

TEST_CASE("audit output over examples/ matches the golden files", "[audit_command][golden]") {
  for (const char* format : {"table", "json", "yaml", "patched"}) {
    CAPTURE(format);
    test::CheckGolden(std::string("audit-examples.") + format, AuditExamples(format));
  }
}

// The verdict of every object of the real-world corpus, one line each: "FILE:DOC[ITEM] KIND
// VERDICT", paths relative to the corpus. A change of verdict shows in the diff.
TEST_CASE("audit verdicts over the real-world corpus match the golden file", "[audit_command][golden][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  std::istringstream no_stdin;
  AuditResult result = CollectAudit({test::CorpusPath()}, Policy{}, no_stdin);
  const std::string root = test::CorpusPath() + "/";
  std::string lines;
  for (const auto& r : result.records) {
    std::string file = r.file.rfind(root, 0) == 0 ? r.file.substr(root.size()) : r.file;
    lines += file + ":" + std::to_string(r.document);
    if (r.item) lines += "[" + std::to_string(*r.item) + "]";
    if (!r.service.empty()) lines += " service " + r.service;
    lines += " " + (r.kind.empty() ? std::string("-") : r.kind) + " " + AuditVerdictName(r.verdict) + "\n";
  }
  test::CheckGolden("corpus-verdicts.txt", lines);
}

}  // namespace
}  // namespace shmguard::cli
