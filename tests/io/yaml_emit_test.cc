// JsonToYaml: what it writes reads back (ParseYaml) to the same JSON.
#include "io/yaml_emit.h"

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

}  // namespace
}  // namespace shmguard::io
