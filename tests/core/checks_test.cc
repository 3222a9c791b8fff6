// The catalogue of checks: one row per Check, stable kebab-case IDs, a section of docs/checks.md
// for each; Finding's accessors.
#include "shmguard/checks.h"

#include <catch2/catch.hpp>
#include <set>

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
