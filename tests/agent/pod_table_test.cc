// PodTable: the node's pods with /dev/shm volumes, as the informer tells of them — their volumes
// found again on each change with what was seen kept, runs ended by phase or deletion (only
// those sampled), the kubelet's refusal of a resize read off the pod, and the containers' state.
#include "agent/pod_table.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

json Pod(const std::string& volumes_yaml, const std::string& status_yaml = "{phase: Running}",
         const std::string& annotations = "{}") {
  return test::Yaml(R"(
metadata: {uid: u1, namespace: ml, name: train-0, annotations: )" +
                    annotations + R"(, ownerReferences: [{kind: Job, name: train, controller: true}]}
spec:
  volumes: )" + volumes_yaml +
                    R"(
  containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm/}]}]
status: )" + status_yaml);
}

constexpr char kDshm[] = "[{name: dshm, emptyDir: {medium: Memory}}]";

TEST_CASE("PodTable keeps what it saw of a volume across the pod's changes, and forgets a volume it lost",
          "[pod_table]") {
  PodTable table(0.9);
  table.Upsert(Pod(kDshm));
  REQUIRE(table.size() == 1);
  table.With([](std::map<std::string, AgentPod>& pods) {
    AgentPod& p = pods.at("u1");
    CHECK(p.workload == "Job/train");
    REQUIRE(p.volumes.count("dshm"));
    p.volumes.at("dshm").Observe(50 << 20, 100 << 20);
  });
  table.Upsert(Pod(kDshm, "{phase: Running, containerStatuses: [{name: t, restartCount: 2, state: {running: {}}}]}",
                   R"({shmguard.io/reclaim-leaked: "true"})"));
  table.With([](std::map<std::string, AgentPod>& pods) {
    const AgentPod& p = pods.at("u1");
    CHECK(p.volumes.at("dshm").peak() == 50 << 20);  // kept
    CHECK(p.run.restarts == 2);
    CHECK(p.run.running);
    CHECK(p.reclaim_annotated);
  });
  auto uses = table.Uses(1'500'000);
  REQUIRE(uses.size() == 1);
  CHECK(uses[0].used == 50 << 20);
  CHECK(uses[0].learned == 75 << 20);  // peak × 1.5
  // The volume taken away (a patch of a pod cannot, a relist of another pod of that UID can).
  table.Upsert(Pod("[]"));
  table.With([](std::map<std::string, AgentPod>& pods) { CHECK(pods.at("u1").volumes.empty()); });
  CHECK(table.Uses(1'500'000).empty());
}

TEST_CASE("PodTable ends a sampled pod's run once, when it succeeds, fails or is deleted", "[pod_table]") {
  PodTable table(0.9);
  table.Upsert(Pod(kDshm));
  table.Upsert(Pod(kDshm, "{phase: Succeeded}"));
  CHECK(table.TakeRuns().empty());  // never sampled: no run to record
  table.With([](std::map<std::string, AgentPod>& pods) { pods.at("u1").volumes.at("dshm").Observe(1, 100); });
  table.Upsert(Pod(kDshm, "{phase: Failed}"));
  auto runs = table.TakeRuns();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].object.is_null());  // a summary: the spec stays in the table
  table.Delete(Pod(kDshm));
  CHECK(table.TakeRuns().empty());  // ended already
  CHECK(table.size() == 0);
}

TEST_CASE("PodTable reads the kubelet's refusal of an unsettled resize off the pod", "[pod_table]") {
  PodTable table(0.9);
  table.Upsert(Pod(kDshm));
  table.With([](std::map<std::string, AgentPod>& pods) { pods.at("u1").growth["dshm"] = {100, 200, {}, false}; });
  table.Upsert(Pod(kDshm, R"({phase: Running, conditions: [{type: PodResizePending, reason: Infeasible,
      message: "Memory-backed emptyDir volume resize is not supported on cgroups v1"}]})"));
  auto refused = table.TakeRefusals();
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].volume == "dshm");
  CHECK(refused[0].message == "Memory-backed emptyDir volume resize is not supported on cgroups v1");
  table.Upsert(Pod(kDshm, R"({phase: Running, conditions: [{type: PodResizePending, reason: Infeasible}]})"));
  CHECK(table.TakeRefusals().empty());  // settled: read once
}

TEST_CASE("VolumeDir is where the kubelet mounts a memory emptyDir", "[pod_table]") {
  CHECK(VolumeDir("/var/lib/kubelet", "u1", "dshm") == "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/dshm");
}

}  // namespace
}  // namespace shmguard::agent
