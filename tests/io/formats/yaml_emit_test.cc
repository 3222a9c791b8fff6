// JsonToYaml: what it writes reads back (ParseYaml) to the same JSON.
#include "io/formats/yaml_emit.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

TEST_CASE("JsonToYaml writes YAML that reads back to the same JSON", "[yaml_emit]") {
  json j = json::parse(R"({"a": "8", "b": 8, "c": "true", "d": true, "e": null, "f": "",
    "g": ["x", {"h": "multi\nline"}], "i": "- dash", "j": "a: b", "k": "64Mi", "l": 1.5,
    "shmguard.io/plan": "{\"x\":1}", "m": {}, "n": [], "o": "line one\nline two\n", "p": " x\n"})");
  std::string yaml = JsonToYaml(j);
  CHECK(test::Yaml(yaml) == j);
}

TEST_CASE("JsonToYaml quotes YAML 1.1's merge and value keys, which readers would not read as strings", "[yaml_emit]") {
  json j = {{"<<", "a"}, {"=", "<<"}, {"b", "="}};
  std::string yaml = JsonToYaml(j);
  CHECK_THAT(yaml, Catch::Contains("\"<<\": a") && Catch::Contains("\"=\": \"<<\"") && Catch::Contains("b: \"=\""));
  CHECK(test::Yaml(yaml) == j);
}

TEST_CASE("JsonToYaml writes text that is not UTF-8 with U+FFFD in its place, still as YAML", "[yaml_emit]") {
  json j = {{"file", std::string("dir/a\xff.yaml")}, {std::string("k\xc3"), "v"}};
  std::string yaml = JsonToYaml(j);
  CHECK_THAT(yaml, Catch::Contains("file: dir/a\xEF\xBF\xBD.yaml"));
  json back = test::Yaml(yaml);
  CHECK(back["file"] == "dir/a\xEF\xBF\xBD.yaml");
  CHECK(back["k\xEF\xBF\xBD"] == "v");
}

}  // namespace
}  // namespace shmguard::io
