// YamlToJson typing (go-yaml v2 / sigs.k8s.io/yaml) and JsonToYaml round trips.
#include <catch2/catch.hpp>

#include "io/manifests.h"
#include "io/yaml_json.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

TEST_CASE("ResolvePlainScalar types plain scalars as YAML 1.1 does", "[yaml_json]") {
  struct Case {
    const char* text;
    json expected;
  };
  const Case cases[] = {
      {"8", 8},           {"-3", -3},         {"0x1F", 31},        {"010", 8},
      {"1_000", 1000},    {"1.5", 1.5},       {"1e3", 1000.0},     {".5", 0.5},
      {"true", true},     {"yes", true},      {"On", true},        {"off", false},
      {"NO", false},      {"~", nullptr},     {"null", nullptr},   {"", nullptr},
      {"64Mi", "64Mi"},   {"1.5Gi", "1.5Gi"}, {"v1", "v1"},        {"12:30", "12:30"},
      {"1.2.3", "1.2.3"}, {"-", "-"},         {"0.0.0.0", "0.0.0.0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(ResolvePlainScalar(c.text) == c.expected);
  }
}

TEST_CASE("YamlToJson keeps quoted scalars as strings and expands merge keys", "[yaml_json]") {
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

TEST_CASE("YamlToJson rejects duplicate and non-scalar keys with the line", "[yaml_json]") {
  YAML::Node dup = YAML::Load("a: 1\nb: 2\na: 3\n");
  auto r = YamlToJson(dup, 10);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().where == "line 13");
  CHECK_THAT(r.error().message, Catch::Contains("duplicate key \"a\""));
  YAML::Node templated = YAML::Load("secret: {{HF_TOKEN}}\n");
  auto t = YamlToJson(templated);
  REQUIRE_FALSE(t.has_value());
  CHECK_THAT(t.error().message, Catch::Contains("unrendered template"));
}

TEST_CASE("YamlToJson rejects invalid UTF-8 with its line (fuzz/audit_fuzz)", "[yaml_json]") {
  for (std::string bad : {std::string("a: \"x\x94y\"\n"), std::string("a: ok\nb: \xc0\xaf\n"),
                          std::string("\xed\xa0\x80: 1\n"), std::string("a: \xf4\x90\x80\x80\n")}) {
    CAPTURE(bad);
    auto r = YamlToJson(YAML::Load(bad), 0);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("invalid UTF-8"));
    CHECK_THAT(r.error().where, Catch::StartsWith("line "));
  }
  CHECK(YamlToJson(YAML::Load("a: \"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n"), 0).has_value());
  auto fuzzed = shmguard::test::ReadTestdata("fuzz-regressions/audit-invalid-utf8.yaml");
  for (const auto& d : ParseManifests(fuzzed, "fuzzed.yaml")) CHECK((d.object.has_value() || d.error.has_value()));
}

TEST_CASE("YamlToJson stops a cyclic alias and deep nesting", "[yaml_json]") {
  auto cyclic = YamlToJson(YAML::Load("a: &x\n  b: *x\n"), 0);
  REQUIRE_FALSE(cyclic.has_value());
  CHECK_THAT(cyclic.error().message, Catch::Contains("nested deeper than 128"));
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
  auto d = YamlToJson(YAML::Load(deep), 0);
  REQUIRE_FALSE(d.has_value());
  CHECK_THAT(d.error().message, Catch::Contains("nested deeper than 128"));
}

TEST_CASE("YamlToJson stops an alias bomb", "[yaml_json]") {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  auto r = YamlToJson(YAML::Load(bomb));
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error().message, Catch::Contains("more than 5 million nodes"));
}

TEST_CASE("JsonToYaml writes YAML that reads back to the same JSON", "[yaml_json]") {
  json j = json::parse(R"({"a": "8", "b": 8, "c": "true", "d": true, "e": null, "f": "",
    "g": ["x", {"h": "multi\nline"}], "i": "- dash", "j": "a: b", "k": "64Mi", "l": 1.5,
    "shmguard.io/plan": "{\"x\":1}", "m": {}, "n": [], "o": "line one\nline two\n", "p": " x\n"})");
  std::string yaml = JsonToYaml(j);
  CHECK(test::Yaml(yaml) == j);
}

}  // namespace
}  // namespace shmguard::io
