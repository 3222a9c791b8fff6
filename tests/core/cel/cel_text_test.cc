// CEL text: literals that hold any value exactly, and the arithmetic policy mode writes in CEL.
// That the API server computes what the webhook does with them is e2e/policy_mode_test.go's to
// show; here, the text.
#include "core/cel/internal/cel_text.h"

#include <catch2/catch.hpp>
#include <string>

namespace shmguard::cel {
namespace {

TEST_CASE("CelString holds any bytes in one single-quoted line", "[cel_text]") {
  const struct {
    const char* name;
    std::string in;
    const char* out;
  } cases[] = {
      {"plain", "shmguard.io/enforce", "'shmguard.io/enforce'"},
      {"a quote cannot end it", "a'b", "'a\\'b'"},
      {"a backslash is doubled", "a\\b", "'a\\\\b'"},
      {"a newline as a byte", "a\nb", "'a\\x0ab'"},
      {"not ASCII, byte by byte", "\xc3\xa9", "'\\xc3\\xa9'"},
      {"DEL", "\x7f", "'\\x7f'"},
      {"empty", "", "''"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) { CHECK(CelString(c.in) == c.out); }
  }
}

TEST_CASE("CelList quotes its items, CelArray writes expressions as they are", "[cel_text]") {
  CHECK(CelList({}) == "[]");
  CHECK(CelList({"nvidia.com/gpu", "a'b"}) == "['nvidia.com/gpu', 'a\\'b']");
  CHECK(CelArray({"1", "variables.x"}) == "[1, variables.x]");
  CHECK(CelBool(true) == "true");
  CHECK(CelBool(false) == "false");
  CHECK(CelInt(-3) == "-3");
}

TEST_CASE("RegexOf anchors one alternation of the globs and names the glob it refuses", "[cel_text]") {
  CHECK(RegexOf({}).value() == "");
  const auto one = RegexOf({"ml-*"});
  REQUIRE(one);
  CHECK(one->front() == '^');
  CHECK(one->back() == '$');
  const auto two = RegexOf({"ml-*", "train-?"});
  REQUIRE(two);
  CHECK(two->find('|') != std::string::npos);
  CHECK(two->substr(0, 4) == "^(?:");
  const auto bad = RegexOf({"ok", "team-[z-a]"});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("z-a"));
}

TEST_CASE("The arithmetic's expressions read what they are given and the policy's variables", "[cel_text]") {
  CHECK_THAT(Bytes("c.resources.limits['memory']"), Catch::Contains("quantity(string(c.resources.limits['memory']))"));
  CHECK_THAT(Safe("variables.a"), Catch::Contains("variables.safetyPpm"));
  CHECK_THAT(Safe("variables.a"), Catch::EndsWith("/ 1048576 * 1048576)"));  // a whole MiB
  CHECK(Share("L", "P") == "((L) / 1000000 * P + (L) % 1000000 * P / 1000000)");
  CHECK_THAT(Env("PET_NNODES"), Catch::Contains("e.name == 'PET_NNODES'"));
  CHECK_THAT(Flag("--nnodes", 8), Catch::Contains(".substring(8)"));
  CHECK_THAT(CountBad("shmguard.io/nodes", 1, 10), Catch::Contains("<= 10"));
  CHECK_THAT(CountAnnotation("shmguard.io/nodes"), Catch::Contains("variables.anns[?'shmguard.io/nodes']"));
  // Every suffix FormatBytes writes, the binary ones first, and the plain number last.
  const std::string text = QuantityText("n");
  size_t at = 0;
  for (const char* suffix :
       {"'Ei'", "'Pi'", "'Ti'", "'Gi'", "'Mi'", "'Ki'", "'E'", "'P'", "'T'", "'G'", "'M'", "'k'"}) {
    CAPTURE(suffix);
    const size_t found = text.find(suffix, at);
    REQUIRE(found != std::string::npos);
    at = found;
  }
  CHECK_THAT(text, Catch::EndsWith("string(n))"));
}

}  // namespace
}  // namespace shmguard::cel
