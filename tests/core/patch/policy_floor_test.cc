// ReadPolicyFloor and UndoPolicyFloor: the exported policy's floor read from its plan annotation,
// and the pod as its author wrote it.
#include "core/patch/policy_floor.h"

#include <catch2/catch.hpp>
#include <optional>
#include <vector>

#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

json WithPlan(json pod, const std::string& plan) {
  pod["metadata"]["annotations"]["shmguard.io/plan"] = plan;
  return pod;
}

PolicyFloor Floor(std::string volume, bool added, std::string raised_from, std::vector<int> mounted_in,
                  std::vector<int> locked_in, bool host_ipc) {
  PolicyFloor f;
  f.volume = std::move(volume);
  f.added = added;
  f.raised_from = std::move(raised_from);
  f.mounted_in = std::move(mounted_in);
  f.locked_in = std::move(locked_in);
  f.host_ipc = host_ipc;
  return f;
}

TEST_CASE("ReadPolicyFloor reads only the exported policies' plan", "[policy_floor]") {
  const json pod = test::Yaml("metadata: {name: p}\nspec: {containers: [{name: a}]}\n");
  struct Case {
    const char* name;
    std::string plan;
    std::optional<PolicyFloor> want;
  };
  const std::vector<Case> cases = {
      {"added", R"({"added":true,"mountedIn":[0,2],"policyMode":true,"required":"6Gi","volume":"dshm","verdict":"ok"})",
       Floor("dshm", true, "", {0, 2}, {}, false)},
      {"raised", R"({"policyMode":true,"raisedFrom":"1Gi","required":"6Gi","volume":"shm"})",
       Floor("shm", false, "1Gi", {}, {}, false)},
      {"privileges", R"({"hostIPC":true,"lockedIn":[1],"policyMode":true,"required":"6Gi"})",
       Floor("", false, "", {}, {1}, true)},
      {"no change", R"({"policyMode":true,"required":"6Gi","verdict":"ok"})", PolicyFloor{}},
      {"the webhook's plan", R"({"required":"6Gi","workers":8})", std::nullopt},
      {"policyMode not true", R"({"policyMode":"true","volume":"dshm"})", std::nullopt},
      {"not JSON", R"({"policyMode":true,)", std::nullopt},
      {"not an object", R"([true])", std::nullopt},
      {"fields of other types", R"({"added":1,"lockedIn":"0","mountedIn":[-1,"x",0.5,3],"policyMode":true,"volume":7})",
       Floor("", false, "", {3}, {}, false)},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      auto floor = ReadPolicyFloor(WithPlan(pod, c.plan));
      REQUIRE(floor.has_value() == c.want.has_value());
      if (!floor) continue;
      CHECK(floor->volume == c.want->volume);
      CHECK(floor->added == c.want->added);
      CHECK(floor->raised_from == c.want->raised_from);
      CHECK(floor->mounted_in == c.want->mounted_in);
      CHECK(floor->locked_in == c.want->locked_in);
      CHECK(floor->host_ipc == c.want->host_ipc);
    }
  }
  CHECK_FALSE(ReadPolicyFloor(pod));
}

TEST_CASE("UndoPolicyFloor gives back the pod its author wrote", "[policy_floor]") {
  const json author = test::Yaml(R"(
metadata: {name: p, annotations: {team: a}}
spec:
  containers:
  - {name: a, volumeMounts: [{name: data, mountPath: /data}], securityContext: {capabilities: {add: [NET_ADMIN]}}}
  - {name: b}
  initContainers: [{name: i}]
  volumes: [{name: data, emptyDir: {}}]
)");
  auto mount = [](json& c, const char* volume) {
    c["volumeMounts"].push_back({{"name", volume}, {"mountPath", "/dev/shm"}});
  };
  SECTION("a volume the policy added, with its mounts, IPC_LOCK and hostIPC") {
    json floored = WithPlan(
        author,
        R"({"added":true,"hostIPC":true,"lockedIn":[0,1],"mountedIn":[0,1,2],"policyMode":true,"volume":"dshm"})");
    floored["spec"]["volumes"].push_back(
        json::parse(R"({"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"6Gi"}})"));
    mount(floored["spec"]["containers"][0], "dshm");
    mount(floored["spec"]["containers"][1], "dshm");
    mount(floored["spec"]["initContainers"][0], "dshm");
    floored["spec"]["containers"][0]["securityContext"]["capabilities"]["add"].push_back("IPC_LOCK");
    floored["spec"]["containers"][1]["securityContext"] = json::parse(R"({"capabilities":{"add":["IPC_LOCK"]}})");
    floored["spec"]["hostIPC"] = true;
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == author);
  }
  SECTION("the only volume, added") {
    json bare = test::Yaml("metadata: {name: p, annotations: {}}\nspec: {containers: [{name: a}]}\n");
    json floored = WithPlan(bare, R"({"added":true,"mountedIn":[0],"policyMode":true,"volume":"dshm"})");
    floored["spec"]["volumes"] = json::parse(R"([{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"6Gi"}}])");
    mount(floored["spec"]["containers"][0], "dshm");
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == bare);
  }
  SECTION("a sizeLimit the policy raised, and a mount of that volume it added") {
    json written = author;
    written["spec"]["volumes"].push_back(
        json::parse(R"({"name":"shm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}})"));
    mount(written["spec"]["containers"][0], "shm");
    json floored = WithPlan(written, R"({"mountedIn":[1],"policyMode":true,"raisedFrom":"1Gi","volume":"shm"})");
    floored["spec"]["volumes"][1]["emptyDir"]["sizeLimit"] = "6Gi";
    mount(floored["spec"]["containers"][1], "shm");
    CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == written);
  }
  SECTION("changes the pod does not show are left as they are") {
    for (const char* plan : {R"({"added":true,"policyMode":true,"volume":"data"})",
                             R"({"added":true,"mountedIn":[7],"lockedIn":[1,9],"policyMode":true,"volume":"gone"})"}) {
      json floored = WithPlan(author, plan);
      CHECK(UndoPolicyFloor(floored, *ReadPolicyFloor(floored)) == author);
    }
  }
}

}  // namespace
}  // namespace shmguard
