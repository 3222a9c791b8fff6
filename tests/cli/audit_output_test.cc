// The audit printers (table, json, yaml, patched) over examples/, fixed by golden files in
// tests/golden/ that a person read once. After an intended change, rewrite them with
// UPDATE_GOLDEN=1 and read the diff.
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "cli/audit_command.h"
#include "test_util.h"

namespace shmguard::cli {
namespace {

// `shmguard audit -o FORMAT PATH` run from the repository's root, as a user there runs it: the
// output does not depend on where the checkout is.
std::string Audit(const std::string& format, const std::string& path) {
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(SOURCE_DIR);
  std::istringstream in;
  std::ostringstream out, err;
  AuditOptions o{{path}, *ParseAuditFormat(format), Severity::kError, 1};
  RunAudit(o, Policy{}, in, out, err);
  std::filesystem::current_path(was);
  return out.str();
}

std::string AuditExamples(const std::string& format) { return Audit(format, "examples"); }

TEST_CASE("audit output over examples/ matches the golden files", "[audit_command][golden]") {
  for (const char* format : {"table", "json", "yaml", "patched"}) {
    CAPTURE(format);
    test::CheckGolden(std::string("audit-examples.") + format, AuditExamples(format));
  }
}

TEST_CASE("audit table keeps the file name and document of a location too long for its column", "[audit_command]") {
  const std::string table = Audit("table", std::string(SOURCE_DIR) + "/examples/argo-workflow.yaml");
  CAPTURE(table);
  const std::string row = table.substr(table.find('\n') + 1, 35);  // the first record's FILE:DOC cell
  CHECK(row.rfind("~", 0) == 0);
  CHECK(row.find("argo-workflow.yaml:0 ") != std::string::npos);
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
