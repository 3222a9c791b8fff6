// ReadPolicyFloor and UndoPolicyFloor: the exported policy's floor read from its plan annotation,
// and the pod as its author wrote it.
#include "shmguard/policy_floor.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

json WithPlan(json pod, const std::string& plan) {
  pod["metadata"]["annotations"]["shmguard.io/plan"] = plan;
  return pod;
}

TEST_CASE("ReadPolicyFloor reads only the exported policies' plan", "[policy_floor]") {
  const json pod = test::Yaml("metadata: {name: p}\nspec: {containers: [{name: a}]}\n");
  struct Case {
    const char* name;
    std::string plan;
    bool found;
    std::string volume, raised_from;
  };
  const std::vector<Case> cases = {
      {"added", R"({"policyMode":true,"required":"6Gi","volume":"dshm","verdict":"ok"})", true, "dshm", ""},
      {"raised", R"({"policyMode":true,"raisedFrom":"1Gi","required":"6Gi","volume":"shm"})", true, "shm", "1Gi"},
      {"no volume changed", R"({"policyMode":true,"required":"6Gi","verdict":"ok"})", true, "", ""},
      {"the webhook's plan", R"({"required":"6Gi","workers":8})", false, "", ""},
      {"policyMode not true", R"({"policyMode":"true","volume":"dshm"})", false, "", ""},
      {"not JSON", R"({"policyMode":true,)", false, "", ""},
      {"not an object", R"([true])", false, "", ""},
      {"a volume that is no string", R"({"policyMode":true,"volume":7})", true, "", ""},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      auto floor = ReadPolicyFloor(WithPlan(pod, c.plan));
      REQUIRE(floor.has_value() == c.found);
      if (!floor) continue;
      CHECK(floor->volume == c.volume);
      CHECK(floor->raised_from == c.raised_from);
    }
  }
  CHECK_FALSE(ReadPolicyFloor(pod));
}

TEST_CASE("UndoPolicyFloor gives back the pod its author wrote", "[policy_floor]") {
  const json author = test::Yaml(R"(
metadata: {name: p, annotations: {team: a}}
spec:
  containers:
  - {name: a, volumeMounts: [{name: data, mountPath: /data}]}
  - {name: b}
  initContainers: [{name: i}]
  volumes: [{name: data, emptyDir: {}}]
)");
  SECTION("a volume the policy added, with its mounts") {
    json floored = WithPlan(author, R"({"policyMode":true,"volume":"dshm"})");
    floored["spec"]["volumes"].push_back(json::parse(R"({"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"6Gi"}})"));
    floored["spec"]["containers"][0]["volumeMounts"].push_back(json::parse(R"({"name":"dshm","mountPath":"/dev/shm"})"));
    floored["spec"]["containers"][1]["volumeMounts"] = json::parse(R"([{"name":"dshm","mountPath":"/dev/shm"}])");
    floored["spec"]["initContainers"][0]["volumeMounts"] = json::parse(R"([{"name":"dshm","mountPath":"/dev/shm"}])");
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == author);
  }
  SECTION("the only volume, added") {
    json bare = test::Yaml("metadata: {name: p}\nspec: {containers: [{name: a}]}\n");
    json floored = WithPlan(bare, R"({"policyMode":true,"volume":"dshm"})");
    floored["spec"]["volumes"] = json::parse(R"([{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"6Gi"}}])");
    floored["spec"]["containers"][0]["volumeMounts"] = json::parse(R"([{"name":"dshm","mountPath":"/dev/shm"}])");
    json undone = UndoPolicyFloor(floored, *ReadPolicyFloor(floored));
    bare["metadata"]["annotations"] = json::object();
    CHECK(undone == bare);
  }
  SECTION("a sizeLimit the policy raised") {
    json written = author;
    written["spec"]["volumes"].push_back(json::parse(R"({"name":"shm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}})"));
    json floored = WithPlan(written, R"({"policyMode":true,"raisedFrom":"1Gi","volume":"shm"})");
    floored["spec"]["volumes"][1]["emptyDir"]["sizeLimit"] = "6Gi";
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == written);
  }
  SECTION("a named volume that is not a memory emptyDir, or is not there: left as it is") {
    json floored = WithPlan(author, R"({"policyMode":true,"volume":"data"})");
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == author);
    floored = WithPlan(author, R"({"policyMode":true,"volume":"gone"})");
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == author);
  }
}

}  // namespace
}  // namespace shmguard
