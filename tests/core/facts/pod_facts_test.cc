// ReadPodFacts: GPUs, memory limits, mounts, IPC_LOCK and volumes (processes, nodes and NCCL
// settings in launch_facts_test.cc).
#include "core/facts/pod_facts.h"

#include <catch2/catch.hpp>

#include "core/workloads/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("ReadPodFacts sums GPUs from limits, else requests, over the configured resources", "[pod_facts]") {
  PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 8}}}]
  containers:
  - {name: a, resources: {limits: {nvidia.com/gpu: 2}, requests: {nvidia.com/gpu: 9}}}
  - {name: b, resources: {requests: {amd.com/gpu: "1"}}}
  - {name: c, resources: {limits: {google.com/tpu: 4}}}
)");
  CHECK(f.gpus == 3);
  REQUIRE(f.containers.size() == 4);
  CHECK(f.containers[3].init);
  CHECK(f.containers[3].gpus == 8);
}

TEST_CASE("ReadPodFacts computes the memory limit as the kubelet does", "[pod_facts]") {
  SECTION("sum of containers, max with init") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  initContainers:
  - {name: big-init, resources: {limits: {memory: 100Gi}}}
  - {name: sidecar, restartPolicy: Always, resources: {limits: {memory: 1Gi}}}
  containers:
  - {name: a, resources: {limits: {memory: 16Gi}}}
  - {name: b, resources: {limits: {memory: "  512Mi "}}}
)");
    REQUIRE(f.memory_limit_bytes.has_value());
    CHECK(*f.memory_limit_bytes == 100ll << 30);
    CHECK(f.memory_limit_source == "sum of container limits");
  }
  SECTION("sidecars add to the app containers") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  initContainers: [{name: s, restartPolicy: Always, resources: {limits: {memory: 1Gi}}}]
  containers: [{name: a, resources: {limits: {memory: 16Gi}}}]
)");
    CHECK(*f.memory_limit_bytes == 17ll << 30);
  }
  SECTION("pod-level limit wins") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  resources: {limits: {memory: 40Gi}}
  containers: [{name: a}, {name: b, resources: {limits: {memory: 16Gi}}}]
)");
    CHECK(*f.memory_limit_bytes == 40ll << 30);
    CHECK(f.memory_limit_source == "pod-level limit");
  }
  SECTION("unknown when a container has none") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  containers: [{name: a, resources: {limits: {memory: 16Gi}}}, {name: b}]
)");
    CHECK_FALSE(f.memory_limit_bytes.has_value());
    CHECK_THAT(f.memory_limit_source, Catch::Contains("\"b\" has no memory limit"));
  }
}

TEST_CASE("ReadPodFacts reads each container's /dev/shm mount and IPC_LOCK once", "[pod_facts]") {
  PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}, {name: data, emptyDir: {}}]
  containers:
  - {name: a, volumeMounts: [{name: dshm, mountPath: /dev/shm/}], securityContext: {privileged: true}}
  - {name: b, volumeMounts: [], securityContext: {capabilities: {add: [cap_ipc_lock]}}}
  - {name: c, securityContext: {runAsUser: 1}}
  - {name: d, securityContext: {capabilities: {drop: [ALL]}}}
  - {name: e, securityContext: {capabilities: {add: [NET_ADMIN]}}}
  initContainers:
  - {name: i, volumeMounts: [{name: dshm, mountPath: /dev/shm}], securityContext: 7}
)");
  REQUIRE(f.containers.size() == 6);
  CHECK(f.containers[0].mounts_shm);
  CHECK(f.containers[0].shm_volume == "dshm");
  CHECK(f.containers[0].ipc_lock == IpcLock::kGranted);
  CHECK(f.containers[1].has_volume_mounts);
  CHECK_FALSE(f.containers[1].mounts_shm);
  CHECK(f.containers[1].ipc_lock == IpcLock::kGranted);
  CHECK_FALSE(f.containers[2].has_volume_mounts);
  CHECK(f.containers[2].ipc_lock == IpcLock::kNoCapabilities);
  CHECK(f.containers[3].ipc_lock == IpcLock::kNoAddList);
  CHECK(f.containers[4].ipc_lock == IpcLock::kNotAdded);
  CHECK(f.containers[5].init);  // an init container's securityContext is not read
  CHECK(f.shm.kind == ShmMountKind::kMemoryEmptyDir);
  CHECK(f.shm.volume_name == "dshm");
  CHECK(f.shm.volume_pointer == "/spec/volumes/0");
  CHECK(f.shm.size_limit == int64_t{2} << 30);
  CHECK(f.has_volumes);
  CHECK(f.volume_names == std::vector<std::string_view>{"dshm", "data"});
}

TEST_CASE("ReadPodFacts names the field of a malformed mount, volume or securityContext", "[pod_facts]") {
  struct Case {
    const char* spec;
    const char* where;
    const char* message;
  };
  const Case cases[] = {
      {"containers: [{name: t, volumeMounts: {name: dshm}}]", "/spec/containers/0/volumeMounts", "must be a list"},
      {"volumes: {dshm: {}}\n  containers: [{name: t}]", "/spec/volumes", "must be a list"},
      {"containers: [{name: t, securityContext: [privileged]}]", "/spec/containers/0/securityContext",
       "must be an object"},
      {"containers: [{name: t, securityContext: {capabilities: {add: IPC_LOCK}}}]",
       "/spec/containers/0/securityContext/capabilities/add", "must be a list"},
      {"volumes: [{name: a, emptyDir: {medium: Memory}}, {name: b, emptyDir: {medium: Memory}}]\n  containers:\n"
       "  - {name: t, volumeMounts: [{name: a, mountPath: /dev/shm}]}\n"
       "  - {name: u, volumeMounts: [{name: b, mountPath: /dev/shm}]}",
       "/spec", "containers mount different volumes at /dev/shm (a, b)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.spec);
    auto f = test::ReadOnlyFacts(std::string("apiVersion: v1\nkind: Pod\nspec:\n  ") + c.spec + "\n");
    REQUIRE_FALSE(f.has_value());
    CHECK(f.error().where.ToString() == c.where);
    CHECK_THAT(f.error().message, Catch::Contains(c.message));
  }
}

}  // namespace
}  // namespace shmguard
