// Tape: an empty one (no document), CountChars as libyaml counts a column, and Locate on a tape
// both parsers build (the parsers' own tests locate every kind of node: fast_json_test.cc,
// yaml_json_test.cc).
#include "io/formats/tape.h"

#include <catch2/catch.hpp>

#include "io/formats/yaml_json.h"

namespace shmguard::io {
namespace {

TEST_CASE("CountChars counts UTF-8 characters, eight bytes at a time and the rest one by one", "[tape]") {
  CHECK(CountChars("") == 0);
  CHECK(CountChars("abc") == 3);
  CHECK(CountChars("abcdefghij") == 10);
  CHECK(CountChars("\xe2\x82\xac") == 1);  // one 3-byte character
  // 16 characters of 2 bytes across the 8-byte words, then a 4-byte one and ASCII in the tail.
  std::string text;
  for (int i = 0; i < 16; ++i) text += "\xc3\xa9";
  text += "\xf0\x9f\x98\x80xy";
  CHECK(CountChars(text) == 16 + 1 + 2);
}

TEST_CASE("A Tape with no document is absent, locates nothing and copies to null", "[tape]") {
  const Tape none;
  CHECK(none.Root().type() == JsonNode::Type::kAbsent);
  CHECK(none.Locate("/spec").line == 0);
  CHECK(none.ToJson().is_null());
}

TEST_CASE("Tape::Locate finds a member at its key and a missing one at its nearest written parent", "[tape]") {
  auto t = ParseYaml("kind: Pod\nspec:\n  containers:\n  - name: a\n    image: x\n");
  REQUIRE(t);
  CHECK(t->Locate("/spec/containers/0/image").line == 5);
  CHECK(t->Locate("/spec/containers/0/image").column == 5);
  CHECK(t->Locate("/spec/containers/0/resources/limits").line == 4);  // the item, its nearest written parent
  CHECK(t->Locate("").line == 1);
  CHECK(t->ToJson()["spec"]["containers"][0]["name"] == "a");
}

}  // namespace
}  // namespace shmguard::io
