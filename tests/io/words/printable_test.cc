// ValidUtf8 and Printable: stray bytes, control characters, and the cut.
#include "io/words/printable.h"

#include <catch2/catch.hpp>

namespace shmguard::io {
namespace {

TEST_CASE("ValidUtf8 keeps valid text and replaces each stray byte with U+FFFD", "[printable]") {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"plain", "plain"},
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"a\xFF"
       "b",
       "a\xEF\xBF\xBD"
       "b"},
      {"\xC3", "\xEF\xBF\xBD"},                                                  // cut short
      {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},                                  // overlong
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},                  // a surrogate
      {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // past U+10FFFF
      {std::string("nul\0in", 6), std::string("nul\0in", 6)},  // valid UTF-8: ValidUtf8 leaves controls
  };
  for (const auto& c : cases) {
    CAPTURE(c.in);
    CHECK(ValidUtf8(c.in) == c.out);
  }
}

TEST_CASE("Printable escapes control characters and cuts long text at a character", "[printable]") {
  CHECK(Printable("uid-1\nshmguard decision allowed") == "uid-1\\x0ashmguard decision allowed");
  CHECK(Printable("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(Printable("a\\b") == "a\\\\b");
  CHECK(Printable("tab\tdel\x7f") == "tab\\x09del\\x7f");
  CHECK(Printable("c1 \xC2\x9B"
                  "x") == "c1 \\x9bx");  // CSI as a C1 control
  CHECK(Printable("caf\xC3\xA9") == "caf\xC3\xA9");
  CHECK(Printable("a\xFF") == "a\xEF\xBF\xBD");
  CHECK(Printable(std::string(100, 'k'), 10) == std::string(10, 'k') + "...");
  CHECK(Printable("ab\xC3\xA9", 3) == "ab...");  // never half a character
  CHECK(Printable("abc", 3) == "abc");
}

}  // namespace
}  // namespace shmguard::io
