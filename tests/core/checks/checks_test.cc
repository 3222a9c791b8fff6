// The catalogue of checks: one row per Check, stable kebab-case IDs, a section of docs/checks.md
// for each that names the row's numbers and values; Finding's accessors, which take no others.
#include "core/checks/checks.h"

#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>

#include "test_util.h"

namespace shmguard {
namespace {

TEST_CASE("Every check has one row, in enum order, with a unique kebab-case ID", "[checks]") {
  auto all = Catalogue();
  REQUIRE(all.size() == static_cast<size_t>(Check::kDocumentUnreadable) + 1);
  std::set<std::string_view> ids;
  for (size_t i = 0; i < all.size(); ++i) {
    const CheckInfo& c = all[i];
    CAPTURE(c.id);
    CHECK(static_cast<size_t>(c.check) == i);
    CHECK(&InfoOf(c.check) == &c);
    CHECK(ids.insert(c.id).second);
    CHECK_FALSE(c.id.empty());
    CHECK(c.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string_view::npos);
    CHECK(c.id.front() != '-');
    CHECK(c.id.back() != '-');
    CHECK(c.id.find("--") == std::string_view::npos);
    CHECK_FALSE(c.title.empty());
    CHECK(FindCheck(c.id) == c.check);
  }
  CHECK_FALSE(FindCheck("Shm-Plan"));
  CHECK_FALSE(FindCheck(""));
  CHECK_FALSE(FindCheck("shm-plan,no-gpus"));
}

TEST_CASE("docs/checks.md has a section for every check and none for a check that is gone", "[checks]") {
  const std::string doc = test::ReadText(std::string(SOURCE_DIR) + "/docs/checks.md");
  REQUIRE_FALSE(doc.empty());
  std::set<std::string> sections;
  size_t pos = 0;
  while ((pos = doc.find("\n### ", pos)) != std::string::npos) {
    pos += 5;
    sections.insert(doc.substr(pos, doc.find('\n', pos) - pos));
  }
  std::set<std::string> ids;
  for (const CheckInfo& c : Catalogue()) {
    ids.emplace(c.id);
    // The section says the default severity first.
    const size_t at = doc.find("\n### " + std::string(c.id) + "\n");
    REQUIRE(at != std::string::npos);
    const std::string severity = std::string("*") + SeverityName(c.severity);
    CHECK(doc.compare(at + 6 + c.id.size(), severity.size(), severity) == 0);
  }
  CHECK(sections == ids);
}

// The backquoted names in text: "`a` (why), `b`" -> {a, b}; "none" -> {}.
std::set<std::string> Quoted(std::string_view text) {
  std::set<std::string> out;
  for (size_t at = text.find('`'); at != std::string_view::npos; at = text.find('`', at + 1)) {
    const size_t end = text.find('`', at + 1);
    if (end == std::string_view::npos) break;
    out.emplace(text.substr(at + 1, end - at - 1));
    at = end;
  }
  return out;
}

std::set<std::string> AsSet(const std::vector<std::string_view>& names) {
  return std::set<std::string>(names.begin(), names.end());
}

TEST_CASE("docs/checks.md names each check's numbers and values as its row declares them", "[checks]") {
  const std::string doc = test::ReadText(std::string(SOURCE_DIR) + "/docs/checks.md");
  for (const CheckInfo& c : Catalogue()) {
    CAPTURE(c.id);
    const size_t at = doc.find("\n### " + std::string(c.id) + "\n");
    REQUIRE(at != std::string::npos);
    const size_t next = doc.find("\n##", at + 1);
    const std::string section = doc.substr(at, next - at);
    const size_t line = section.find("\nNumbers: ");
    REQUIRE(line != std::string::npos);
    const std::string text = section.substr(line + 1, section.find('\n', line + 1) - line - 1);
    const size_t values = text.find(". Values: ");
    REQUIRE(values != std::string::npos);
    CHECK(Quoted(std::string_view(text).substr(0, values)) == AsSet(c.NumberNames()));
    CHECK(Quoted(std::string_view(text).substr(values)) == AsSet(c.ValueNames()));
  }
}

TEST_CASE("A finding sets and reads only the numbers and values its check declares", "[checks]") {
  for (const CheckInfo& c : Catalogue()) {
    CAPTURE(c.id);
    for (std::string_view name : c.NumberNames()) {
      CHECK(c.CarriesNumber(name));
      CHECK_FALSE(c.CarriesValue(name));
    }
    for (std::string_view name : c.ValueNames()) CHECK(c.CarriesValue(name));
    Finding f(c.check);
    CHECK_THROWS_AS(f.Num("no_such_number", 1), std::logic_error);
    CHECK_THROWS_AS(f.Val("no_such_value", "x"), std::logic_error);
    CHECK_THROWS_AS(f.Number("no_such_number"), std::logic_error);
    CHECK_THROWS_AS(f.HasNumber("no_such_number"), std::logic_error);
    CHECK_THROWS_AS(f.Value("no_such_value"), std::logic_error);
  }
  CHECK(InfoOf(Check::kProcsGpusMismatch).NumberNames() == std::vector<std::string_view>{"procs", "gpus"});
  CHECK(InfoOf(Check::kProcsGpusMismatch).ValueNames() == std::vector<std::string_view>{"procs_source"});
  CHECK(InfoOf(Check::kNoGpus).NumberNames().empty());
  // A prefix or a suffix of a declared name is another name.
  CHECK(InfoOf(Check::kShmPlan).CarriesNumber("procs"));
  CHECK_FALSE(InfoOf(Check::kShmPlan).CarriesNumber("proc"));
  CHECK_FALSE(InfoOf(Check::kShmPlan).CarriesNumber("procs_source"));
  CHECK_FALSE(InfoOf(Check::kShmPlan).CarriesNumber(""));
  CHECK_THROWS_WITH(
      Finding(Check::kHostIpcMissing).Num("procs", 2),
      "check host-ipc-missing carries no number \"procs\" (its row in src/core/checks/check_catalogue.cc)");
}

TEST_CASE("Severities are ordered and named", "[checks]") {
  CHECK(Severity::kInfo < Severity::kWarning);
  CHECK(Severity::kWarning < Severity::kError);
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kError}) CHECK(ParseSeverity(SeverityName(s)) == s);
  CHECK_FALSE(ParseSeverity("deny"));
  CHECK_FALSE(ParseSeverity("ERROR"));
}

TEST_CASE("A finding takes its check's severity and keeps numbers and values by name", "[checks]") {
  Finding f(Check::kShmOverMemoryLimit, "/spec/containers/0/resources/limits/memory");
  CHECK(f.severity == Severity::kError);
  CHECK(f.id() == "shm-over-memory-limit");
  CHECK_FALSE(f.HasNumber("required_bytes"));
  CHECK(f.Number("required_bytes") == 0);
  CHECK(f.Value("volume").empty());
  f.Num("required_bytes", 1ll << 40).Val("volume", "dshm");
  CHECK(f.HasNumber("required_bytes"));
  CHECK(f.Number("required_bytes") == 1ll << 40);
  CHECK(f.Value("volume") == "dshm");
  CHECK(Finding(Check::kShmBelowNeed).At(Severity::kError).severity == Severity::kError);
  Finding g = f;
  CHECK(g == f);
  g.suppressed = true;
  CHECK_FALSE(g == f);
}

}  // namespace
}  // namespace shmguard
