// ParseYaml: typing, merge keys, errors with lines, hostile documents, pruning.
#include "io/yaml_json.h"

#include <catch2/catch.hpp>

#include "io/manifests.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

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
  CHECK(*ParseYaml("a: 1\n...\nb: 2\n") == json({{"a", 1}}));
  CHECK(ParseYaml("# only a comment\n")->is_null());
  CHECK(*ParseYaml("b: !!str 8\nc: !!int \"8\"\nd: |\n  8\ne: !custom 8\n") ==
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
  CHECK_THAT(r.error().message, Catch::Contains("more than 5 million nodes"));
}

TEST_CASE("ParseYaml with prune skips what the evaluation never reads, and nothing else", "[yaml_json]") {
  const char* pod = R"(kind: Pod
status: {phase: Running}
metadata:
  name: p
  labels: &labels {app: x}
  managedFields: [{manager: kubectl}]
  annotations: {team: a, shmguard.io/num-workers: "8"}
spec:
  affinity: &aff {nodeAffinity: {}}
  containers:
  - name: c
    image: busybox
    env:
    - {name: NCCL_DEBUG, value: WARN}
    - {value: "4", name: PET_NPROC_PER_NODE}
    resources: {limits: {memory: 8Gi}}
)";
  auto pruned = ParseYaml(pod, 1, true);
  REQUIRE(pruned.has_value());
  CHECK(*pruned == json::parse(R"({"kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"},
    "annotations": {"shmguard.io/num-workers": "8"}},
    "spec": {"containers": [{"name": "c", "env": [{"name": "PET_NPROC_PER_NODE", "value": "4"}],
    "resources": {"limits": {"memory": "8Gi"}}}]}})"));
  // An alias in a kept field of an anchor inside a skipped one: parsed again, in full.
  auto reused = ParseYaml(std::string(pod) + "  volumes:\n  - name: *aff\n", 1, true);
  REQUIRE(reused.has_value());
  CHECK((*reused)["spec"]["volumes"] == json::parse(R"([{"name": {"nodeAffinity": {}}}])"));
  CHECK((*reused)["spec"].contains("affinity"));
  // Errors inside skipped members are still errors.
  auto dup = ParseYaml("spec:\n  affinity: {}\n  affinity: {}\n", 1, true);
  REQUIRE_FALSE(dup.has_value());
  CHECK(dup.error().where.line == 3);
  auto cycle = ParseYaml("spec:\n  affinity: &a\n    x: *a\n", 1, true);
  REQUIRE_FALSE(cycle.has_value());
  CHECK_THAT(cycle.error().message, Catch::Contains("inside its own anchor"));
  CHECK_FALSE(ParseYaml("spec:\n  affinity: *nope\n", 1, true).has_value());
}

}  // namespace
}  // namespace shmguard::io
