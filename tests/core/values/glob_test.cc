// GlobRegex: a policy glob read as fnmatch(3) reads it, as RE2 — the same names on both sides,
// or refused.
#include "core/values/glob.h"

#include <fnmatch.h>

#include <catch2/catch.hpp>
#include <regex>

namespace shmguard {
namespace {

TEST_CASE("GlobRegex matches what fnmatch(3) matches", "[glob]") {
  struct Case {
    const char* glob;
    const char* name;
  };
  const Case cases[] = {{"ml-*", "ml-train"},
                        {"ml-*", "xml-train"},
                        {"kube-*", "kube-system"},
                        {"*", "anything"},
                        {"a?c", "abc"},
                        {"a?c", "ac"},
                        {"team.a", "team.a"},
                        {"team.a", "teamxa"},
                        {"ns-[0-9]", "ns-7"},
                        {"ns-[!0-9]", "ns-7"},
                        {"ns-[!0-9]", "ns-x"},
                        {"ns-[^0-9]", "ns-x"},
                        {"a+b", "a+b"},
                        {"(x)", "(x)"},
                        {"train-*-gpu", "train-1-gpu"},
                        {"[]]", "]"},
                        {"[]a]", "a"},
                        {"[!]a]", "b"},
                        {"x\\*", "x*"},
                        {"x\\*", "xy"},
                        {"[[:digit:]]-a", "7-a"},
                        {"[[:alpha:]]-a", "7-a"},
                        {"[a\\]]", "]"},
                        {"[a-c-e]", "-"},
                        {"[-a]", "-"},
                        {"team-[a-c]*", "team-b-1"}};
  for (const auto& c : cases) {
    CAPTURE(c.glob, c.name);
    auto regex = GlobRegex(c.glob);
    REQUIRE(regex);
    CHECK(std::regex_match(c.name, std::regex(*regex, std::regex::ECMAScript)) == (fnmatch(c.glob, c.name, 0) == 0));
  }
}

TEST_CASE("GlobRegex refuses what fnmatch and RE2 would read differently, saying why", "[glob]") {
  const struct {
    const char* glob;
    const char* why;
  } cases[] = {
      {"team-[z-a]", "a reversed range z-a"},
      {"x-[!]", "left open"},
      {"ml-[[:alpha:]", "left open"},
      {"ml-[", "left open"},
      {"ml-[[:nope:]]", "unknown character class [:nope:]"},
      {"ml-[[.a.]]", "collating elements"},
      {"ml-\\", "ends in a backslash"},
      {"ml-\na", "printable ASCII"},
      {"ml-é", "printable ASCII"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.glob);
    auto r = GlobRegex(c.glob);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains(c.why));
  }
}

}  // namespace
}  // namespace shmguard
