// The audit's four outputs over examples/, fixed by golden files in tests/golden/ that a person
// read once. After an intended change, rewrite them with UPDATE_GOLDEN=1 and read the diff.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/audit_command.h"

namespace shmguard::cli {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `shmguard audit -o FORMAT examples/`, with the paths as a user in the repository sees them.
std::string AuditExamples(const std::string& format) {
  const std::string root = std::string(SOURCE_DIR) + "/";
  std::istringstream in;
  std::ostringstream out, err;
  AuditOptions o{{root + "examples"}, format, "deny", 1};
  RunAudit(o, Policy{}, in, out, err);
  std::string text = out.str();
  for (size_t at = text.find(root); at != std::string::npos; at = text.find(root, at)) text.erase(at, root.size());
  return text;
}

TEST_CASE("audit output over examples/ matches the golden files", "[audit_command][golden]") {
  const bool update = std::getenv("UPDATE_GOLDEN") != nullptr;
  for (const char* format : {"table", "json", "yaml", "patched"}) {
    CAPTURE(format);
    const std::string golden = std::string(SOURCE_DIR) + "/tests/golden/audit-examples." + format;
    const std::string actual = AuditExamples(format);
    if (update) {
      std::ofstream(golden, std::ios::binary) << actual;
      WARN("rewrote " << golden);
      continue;
    }
    const std::string expected = ReadFile(golden);
    REQUIRE_FALSE(expected.empty());
    CHECK(actual == expected);
  }
}

}  // namespace
}  // namespace shmguard::cli
