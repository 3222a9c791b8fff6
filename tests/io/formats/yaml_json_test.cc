// ParseYaml: typing, merge keys, errors with lines, hostile documents, positions.
#include "io/formats/yaml_json.h"

#include <catch2/catch.hpp>

#include "io/files/manifests.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

json Parsed(std::string_view text) {
  auto t = ParseYaml(text);
  INFO(text);
  REQUIRE(t.has_value());
  return t->ToJson();
}

TEST_CASE("ParseYaml keeps quoted scalars as strings and expands merge keys", "[yaml_json]") {
  json j = test::Yaml(R"(
base: &base {cpu: "8", memory: 16Gi}
quoted: "8"
single: 'true'
plain: 8
merged:
  <<: *base
  memory: 32Gi
alias: *base
)");
  CHECK(j["quoted"] == "8");
  CHECK(j["single"] == "true");
  CHECK(j["plain"] == 8);
  CHECK(j["merged"] == json({{"cpu", "8"}, {"memory", "32Gi"}}));
  CHECK(j["alias"] == json({{"cpu", "8"}, {"memory", "16Gi"}}));
}

TEST_CASE("ParseYaml rejects duplicate and non-scalar keys with the line", "[yaml_json]") {
  auto r = ParseYaml("a: 1\nb: 2\na: 3\n", 11);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().where.line == 13);
  CHECK_THAT(r.error().message, Catch::Contains("duplicate key \"a\""));
  auto t = ParseYaml("x: 1\nsecret: {{HF_TOKEN}}\n");
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().where.line == 2);
  CHECK_THAT(t.error().message, Catch::Contains("unrendered template"));
  auto alias_key = ParseYaml("a: &k x\n*k : 1\n");
  REQUIRE_FALSE(alias_key.has_value());
  CHECK_THAT(alias_key.error().message, Catch::Contains("alias (*k)"));
}

TEST_CASE("ParseYaml reports syntax errors with the file's line and libyaml's words", "[yaml_json]") {
  auto r = ParseYaml("metadata:\n  name: x\n spec: y\n", 20);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().where.line == 22);
  CHECK_THAT(r.error().message, Catch::StartsWith("YAML: "));
  auto unknown = ParseYaml("a: *nope\n");
  REQUIRE_FALSE(unknown.has_value());
  CHECK_THAT(unknown.error().message, Catch::Contains("unknown anchor *nope"));
  // Only the first document of the text is read, as go-yaml's Unmarshal does.
  CHECK(Parsed("a: 1\n...\nb: 2\n") == json({{"a", 1}}));
  CHECK(Parsed("# only a comment\n").is_null());
  CHECK(Parsed("b: !!str 8\nc: !!int \"8\"\nd: |\n  8\ne: !custom 8\n") ==
        json({{"b", "8"}, {"c", 8}, {"d", "8\n"}, {"e", "8"}}));
}

TEST_CASE("ParseYaml rejects invalid UTF-8 with its line (fuzz/audit_fuzz)", "[yaml_json]") {
  for (std::string bad : {std::string("a: \"x\x94y\"\n"), std::string("a: ok\nb: \xc0\xaf\n"),
                          std::string("\xed\xa0\x80: 1\n"), std::string("a: \xf4\x90\x80\x80\n")}) {
    CAPTURE(bad);
    auto r = ParseYaml(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("invalid UTF-8"));
    CHECK(r.error().where.line > 0);
  }
  CHECK(ParseYaml("a: \"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n").has_value());
  auto fuzzed = shmguard::test::ReadTestdata("fuzz-regressions/audit-invalid-utf8.yaml");
  for (const auto& d : ParseManifests(fuzzed, "fuzzed.yaml")) CHECK((d.object.has_value() || d.error.has_value()));
}

TEST_CASE("ParseYaml stops a cyclic alias and deep nesting", "[yaml_json]") {
  auto cyclic = ParseYaml("a: &x\n  b: *x\n");
  REQUIRE_FALSE(cyclic.has_value());
  CHECK(cyclic.error().where.line == 2);
  CHECK_THAT(cyclic.error().message, Catch::Contains("inside its own anchor"));
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
  auto d = ParseYaml(deep);
  REQUIRE_FALSE(d.has_value());
  CHECK_THAT(d.error().message, Catch::Contains("nested deeper than 128"));
}

TEST_CASE("ParseYaml stops an alias bomb", "[yaml_json]") {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  auto r = ParseYaml(bomb);
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error().message, Catch::Contains("excessive aliasing"));
}

// go-yaml's allowedAliasRatio: past 1,000 nodes at most 99% may come from aliases (less past
// 400,000), so a small document can grow only so far; what a real document does with a few
// aliases passes.
TEST_CASE("ParseYaml allows aliases as go-yaml does: 99% of 400,000 nodes, no more", "[yaml_json]") {
  // `levels` of 10 aliases each over a 10-item list: 10^levels nodes from 2 + 10 × levels written.
  auto bomb = [](int levels) {
    std::string doc = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    char prev = 'a';
    for (int l = 1; l < levels; ++l) {
      const char c = static_cast<char>('a' + l);
      doc += std::string(1, c) + ": &" + c + " [";
      for (int i = 0; i < 10; ++i) doc += std::string(i ? ", *" : "*") + prev;
      doc += "]\n";
      prev = c;
    }
    return doc;
  };
  CHECK(ParseYaml(bomb(3)).has_value());  // 1,236 nodes, 98.7% from aliases
  auto big = ParseYaml(bomb(4));          // 12,358 nodes, 99.8% from aliases: go-yaml refuses it too
  REQUIRE_FALSE(big.has_value());
  CHECK_THAT(big.error().message, Catch::Contains("excessive aliasing"));
  // A manifest with a few anchors (a shared resources block) is far from any limit.
  CHECK(
      ParseYaml("r: &r {cpu: 8, memory: 16Gi}\nc: [{resources: *r}, {resources: *r}, {resources: *r}]\n").has_value());
}

TEST_CASE("ParseYaml merges keys after a mapping's own, which win, and members are read by key", "[yaml_json]") {
  auto t = ParseYaml("base: &b {z: 1, a: 2}\nm:\n  y: 3\n  <<: *b\n  a: 4\n  <<: [{q: 5}]\n");
  REQUIRE(t.has_value());
  std::vector<std::string> keys;
  for (const auto& [key, value] : t->Root().Find("m").Members()) keys.emplace_back(key);
  CHECK(keys == std::vector<std::string>{"a", "q", "y", "z"});
  CHECK(t->Root().Find("m").Find("a").Integer() == 4);  // the explicit key wins
  CHECK(t->Root().Find("m").Dump() == R"({"a":4,"q":5,"y":3,"z":1})");
  CHECK_FALSE(ParseYaml("m:\n  <<: [1]\n").has_value());
}

TEST_CASE("ParseYaml locates members at their keys, items at their first character, in the file's lines",
          "[yaml_json]") {
  const char* pod = R"(# a comment line
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    shmguard.io/num-workers: "8"
spec:
  containers:
  - name: t
    resources:
      limits: {nvidia.com/gpu: 4, memory: 64Gi}
  - {name: "\u00e9t\u00e9", image: x}
  volumes: &v
  - name: dshm
  other: *v
)";
  auto t = ParseYaml(pod, 10);  // the text starts on line 10 of its file
  REQUIRE(t.has_value());
  struct Case {
    const char* pointer;
    int line, column;
  };
  const Case cases[] = {
      {"", 11, 1},                                                     // the document: its first node
      {"/kind", 12, 1},                                                // a member: its key
      {"/metadata/annotations/shmguard.io~1num-workers", 16, 5},       // an escaped "/"
      {"/spec/containers/0", 19, 5},                                   // an item: its first character
      {"/spec/containers/0/resources/limits/memory", 21, 35},          // in flow style
      {"/spec/containers/1/image", 22, 29},                            // after a quoted scalar
      {"/spec/containers/0/securityContext/capabilities/add", 19, 5},  // missing: the nearest written parent
      {"/spec/hostIPC", 17, 1},
      {"/spec/containers/7", 18, 3},
      {"/nothing/at/all", 11, 1},
      {"/spec/other/0/name", 25, 3},  // inside an alias's copy: where the alias is written
  };
  for (const auto& c : cases) {
    CAPTURE(c.pointer);
    const TextPosition at = t->Locate(c.pointer);
    CHECK(at.line == c.line);
    CHECK(at.column == c.column);
  }
  CHECK(Tape().Locate("/kind").line == 0);  // no document
}

}  // namespace
}  // namespace shmguard::io
