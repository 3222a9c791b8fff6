// ParseJsonPruned / ParseReviewPruned: what is dropped, errors, and — over all test data — that
// dropping it never changes an Evaluation (shmguard/relevant_fields.h).
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/audit_command.h"
#include "io/fast_json.h"
#include "io/yaml_json.h"
#include "shmguard/evaluation.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

TEST_CASE("ParseJsonPruned keeps what the evaluation reads and drops the rest", "[fast_json]") {
  auto j = ParseJsonPruned(R"({"kind":"Pod","status":{"phase":"Running"},
    "metadata":{"name":"p","managedFields":[{"manager":"x"}],"annotations":{"a":"1","shmguard.io/num-workers":"8"}},
    "spec":{"tolerations":[{}],"containers":[{"name":"t","env":[{"name":"A","value":"1"},
      {"name":"PET_NNODES","value":"2"},{"name":"B","valueFrom":{}}],"ports":[{"containerPort":1}],
      "resources":{"limits":{"memory":"1Gi","nvidia.com/gpu":2}}}],"hostIPC":false,"n":-3,"u":18446744073709551615,"d":1.5}})");
  REQUIRE(j.has_value());
  json expected = json::parse(R"({"kind":"Pod","metadata":{"name":"p","annotations":{"shmguard.io/num-workers":"8"}},
    "spec":{"containers":[{"name":"t","env":[{"name":"PET_NNODES","value":"2"}],
      "resources":{"limits":{"memory":"1Gi","nvidia.com/gpu":2}}}],"hostIPC":false,"n":-3,"u":18446744073709551615,"d":1.5}})");
  CHECK(*j == expected);
}

TEST_CASE("ParseReviewPruned keeps only the request fields a decision reads", "[fast_json]") {
  auto j = ParseReviewPruned(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
    "uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"n","operation":"CREATE","dryRun":true,
    "userInfo":{"username":"me"},"oldObject":{"big":1},"options":{},"object":{"kind":"Pod","status":{}}}})");
  REQUIRE(j.has_value());
  CHECK((*j)["request"].size() == 6);
  CHECK((*j)["request"]["object"] == json({{"kind", "Pod"}}));
  CHECK_FALSE((*j)["request"].contains("userInfo"));
}

TEST_CASE("ParseJsonPruned rejects invalid and too deeply nested JSON", "[fast_json]") {
  for (std::string bad : {std::string("{"), std::string("{\"a\":}"), std::string("[1,]"), std::string("{} {}"),
                          std::string("\"\\ud800\""), std::string("nul"), std::string("")}) {
    CAPTURE(bad);
    auto r = ParseJsonPruned(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("not valid JSON"));
  }
  for (int depth : {129, 1000, 100000}) {
    CAPTURE(depth);
    auto r = ParseJsonPruned(std::string(depth, '[') + std::string(depth, ']'));
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("nested deeper than 128"));
  }
  CHECK(ParseJsonPruned(std::string(100, '[') + std::string(100, ']')).has_value());
}

void CheckSameEvaluation(const json& full, const json& pruned, const std::string& what) {
  Evaluation a = Evaluate(full, Policy{}, "team-a");
  Evaluation b = Evaluate(pruned, Policy{}, "team-a");
  CAPTURE(what);
  CHECK(a.verdict == b.verdict);
  CHECK(a.AllReasons() == b.AllReasons());
  CHECK(a.AllWarnings() == b.AllWarnings());
  CHECK(a.patch == b.patch);
  if (!a.patch.empty()) CHECK(full.patch(a.patch).is_object());  // and it applies to the full object
}

// Both pruning parsers: simdjson over the JSON text, libyaml over the YAML text.
void CheckSameEvaluation(const json& full, const std::string& what) {
  auto from_json = ParseJsonPruned(full.dump());
  REQUIRE(from_json.has_value());
  CheckSameEvaluation(full, *from_json, what + " (JSON)");
  auto from_yaml = ParseYaml(JsonToYaml(full), 1, /*prune=*/true);
  REQUIRE(from_yaml.has_value());
  CheckSameEvaluation(full, *from_yaml, what + " (YAML)");
}

TEST_CASE("Pruning never changes an Evaluation over the real-world data", "[fast_json]") {
  std::istringstream none;
  auto result = cli::CollectAudit({test::TestdataPath("shared"), std::string(SOURCE_DIR) + "/examples"}, Policy{}, none);
  int compared = 0;
  for (const auto& doc : result.documents) {
    if (!doc.is_json && !doc.text.empty()) {  // the document as written: same result, same errors
      auto pruned = ParseYaml(doc.text, doc.line, /*prune=*/true);
      CAPTURE(doc.file, doc.index);
      REQUIRE(pruned.has_value() == doc.object.has_value());
      if (!pruned) CHECK(pruned.error().ToString() == ParseYaml(doc.text, doc.line).error().ToString());
      if (pruned && doc.object->is_object()) CheckSameEvaluation(*doc.object, *pruned, doc.file + " as written");
    }
    if (!doc.object || !doc.object->is_object()) continue;
    CheckSameEvaluation(*doc.object, doc.file + ":" + std::to_string(doc.index));
    json annotated = *doc.object;
    annotated["metadata"]["annotations"]["shmguard.io/num-workers"] = "4";
    annotated["metadata"]["annotations"]["shmguard.io/batch-bytes"] = "16Mi";
    annotated["metadata"]["annotations"]["unrelated/key"] = "x";
    CheckSameEvaluation(annotated, doc.file + ":" + std::to_string(doc.index) + " annotated");
    ++compared;
  }
  CHECK(compared >= 100);
}

}  // namespace
}  // namespace shmguard::io
