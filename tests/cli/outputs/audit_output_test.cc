// The audit printers (table, json, yaml, patched) over examples/, fixed by golden files in
// tests/golden/ that a person read once: the records as parsed JSON, the table's layout and the
// patched manifests without the findings' words, and the words in one file of their own. After
// an intended change, rewrite them with UPDATE_GOLDEN=1 and read the diff.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands/audit_command.h"
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

// The JSON output without the findings' words: what the golden file of records holds.
nlohmann::json WithoutMessages(nlohmann::json out) {
  for (auto& record : out["records"]) {
    for (auto& finding : record["findings"]) finding.erase("message");
  }
  return out;
}

// The table with each finding's words cut after its ID ("  ! [shm-below-need] …").
std::string TableWithoutMessages(const std::string& table) {
  std::istringstream lines(table);
  std::string out, line;
  while (std::getline(lines, line)) {
    const size_t id = line.find("] ");
    if (line.size() > 4 && line.compare(3, 2, " [") == 0 && id != std::string::npos)
      line = line.substr(0, id + 1) + " …";
    out += line + "\n";
  }
  return out;
}

// What the records hold, as parsed JSON: a reworded finding changes only the messages below.
TEST_CASE("audit -o json over examples/ holds the golden records", "[audit_command][golden]") {
  const nlohmann::json out = WithoutMessages(nlohmann::json::parse(AuditExamples("json")));
  const std::string path = std::string(SOURCE_DIR) + "/tests/golden/audit-examples.json";
  if (std::getenv("UPDATE_GOLDEN")) test::CheckGolden("audit-examples.json", out.dump(2) + "\n");
  const std::string golden = test::ReadText(path);
  INFO("golden file " << path << " (UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE_FALSE(golden.empty());
  CHECK(out == nlohmann::json::parse(golden));
}

TEST_CASE("audit -o yaml over examples/ reads back as the JSON output", "[audit_command]") {
  const std::vector<nlohmann::json> docs = test::YamlDocuments(AuditExamples("yaml"));
  REQUIRE(docs.size() == 1);
  CHECK(docs[0] == nlohmann::json::parse(AuditExamples("json")));
}

// The words of every finding over examples/, one per line: the one golden file a rewording
// changes (each check's wording is tested in tests/core/checks/check_catalogue_test.cc).
TEST_CASE("audit over examples/ words each finding as the golden messages", "[audit_command][golden]") {
  const nlohmann::json out = nlohmann::json::parse(AuditExamples("json"));
  std::string lines;
  for (const auto& record : out["records"]) {
    for (const auto& f : record["findings"]) {
      lines += record["file"].get<std::string>() + ":" + std::to_string(record["document"].get<int>()) + " " +
               f["id"].get<std::string>() + ": " + f["message"].get<std::string>() + "\n";
    }
  }
  test::CheckGolden("audit-examples.messages", lines);
}

// The table's layout and the patched manifests, byte for byte; the table's words cut.
TEST_CASE("audit -o table and -o patched over examples/ match the golden files", "[audit_command][golden]") {
  test::CheckGolden("audit-examples.table", TableWithoutMessages(AuditExamples("table")));
  test::CheckGolden("audit-examples.patched", AuditExamples("patched"));
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
