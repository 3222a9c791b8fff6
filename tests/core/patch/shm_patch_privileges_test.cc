// BuildPodPatch's privileges through Evaluate: IPC_LOCK where it takes effect (a root container
// that uses RDMA, or as the policy's ipcLock rules say), hostIPC only when the policy says so,
// neither under baseline Pod Security; each patch applied and evaluated again.
#include <catch2/catch.hpp>
#include <set>

#include "core/patch/patch_check.h"
#include "core/patch/shm_patch.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
using patch_test::FindingOf;
using patch_test::kBarePod;
using patch_test::PatchAndRecheck;
using test::Yaml;

TEST_CASE("BuildPodPatch adds IPC_LOCK to a root GPU container that uses RDMA, and hostIPC only when told",
          "[shm_patch]") {
  json pod = Yaml(kBarePod);
  pod["spec"]["containers"][0]["resources"]["limits"]["rdma/hca_shared_devices_a"] = 1;
  SECTION("ipcLock auto: the RDMA container, whose user is the image's") {
    json out = PatchAndRecheck(pod);
    CHECK(out["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
    CHECK_FALSE(out["spec"]["containers"][1].contains("securityContext"));
    CHECK_FALSE(out["spec"].contains("hostIPC"));
  }
  SECTION("hostIPC always") {
    Policy p;
    p.host_ipc = HostIpcMode::kAlways;
    json out = PatchAndRecheck(pod, p);
    CHECK(out["spec"]["hostIPC"] == true);
  }
  SECTION("a namespace rule's hostIPC always, beside the policy's auto") {
    Policy p;
    NamespaceRule legacy{{"legacy-*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kPrivileged};
    legacy.host_ipc = HostIpcMode::kAlways;
    p.namespaces.insert(p.namespaces.begin(), legacy);
    CHECK(PatchAndRecheck(pod, p, "legacy-a")["spec"]["hostIPC"] == true);
    CHECK_FALSE(PatchAndRecheck(pod, p, "team-a")["spec"].contains("hostIPC"));
  }
}

TEST_CASE("BuildPodPatch respects capabilities that already grant IPC_LOCK", "[shm_patch]") {
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  containers:
  - {name: a, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [ipc_lock]}}}
  - {name: b, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [CAP_IPC_LOCK]}}}
  - {name: c, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {privileged: true}}
  - {name: d, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [SYS_PTRACE]}}}
  - {name: e, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [all]}}}
)");
  json out = PatchAndRecheck(pod);
  const json& c = out["spec"]["containers"];
  CHECK(c[0]["securityContext"]["capabilities"]["add"] == json::array({"ipc_lock"}));
  CHECK(c[1]["securityContext"]["capabilities"]["add"] == json::array({"CAP_IPC_LOCK"}));
  CHECK_FALSE(c[2]["securityContext"].contains("capabilities"));
  CHECK(c[3]["securityContext"]["capabilities"]["add"] == json::array({"SYS_PTRACE", "IPC_LOCK"}));
  CHECK(c[4]["securityContext"]["capabilities"]["add"] == json::array({"all"}));
  CHECK_FALSE(out["spec"].contains("hostIPC"));  // 5 GPUs, hostIPC auto
}

TEST_CASE("BuildPodPatch adds IPC_LOCK by the RDMA and user rules of ipcLock auto", "[shm_patch]") {
  // Each container requests a GPU; whether it gets IPC_LOCK follows from its RDMA and its user.
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  securityContext: {runAsUser: 0}
  containers:
  - {name: efa-root, resources: {limits: {nvidia.com/gpu: 1, vpc.amazonaws.com/efa: 1}}}
  - {name: ib-env, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_NET, value: ib}]}
  - {name: hca-env, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_IB_HCA, value: "mlx5_0,mlx5_1"}]}
  - name: ib-disabled
    resources: {limits: {nvidia.com/gpu: 1}}
    env: [{name: NCCL_IB_HCA, value: mlx5_0}, {name: NCCL_IB_DISABLE, value: "1"}]
  - {name: ofi, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_NET_PLUGIN, value: aws-ofi}]}
  - {name: plugin-none, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_NET_PLUGIN, value: none}]}
  - {name: fi-efa, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: FI_PROVIDER, value: efa}]}
  - {name: ucx-ib, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: UCX_NET_DEVICES, value: "mlx5_0:1"}]}
  - {name: ucx-tcp, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: UCX_NET_DEVICES, value: eth0}]}
  - name: rdma-non-root
    resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}
    securityContext: {runAsUser: 1000}
  - name: rdma-non-root-flag
    resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}
    securityContext: {runAsUser: null, runAsNonRoot: true}
  - {name: rdma-no-gpu, resources: {limits: {rdma/ib: 1}}}
  - {name: plain, resources: {limits: {nvidia.com/gpu: 1}}}
)");
  const std::set<std::string> want = {"efa-root", "ib-env", "hca-env", "ofi", "fi-efa", "ucx-ib"};
  json out = PatchAndRecheck(pod);
  for (const json& c : out["spec"]["containers"]) {
    const std::string name = c["name"];
    CAPTURE(name);
    const bool locked = c.contains("securityContext") && c["securityContext"].contains("capabilities");
    CHECK(locked == want.count(name) > 0);
  }
}

TEST_CASE("BuildPodPatch follows the policy's hostIPC, ipcLock and init container choices", "[shm_patch]") {
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  hostIPC: false
  initContainers:
  - {name: warmup, resources: {limits: {nvidia.com/gpu: 1}}}
  - {name: fetch}
  containers:
  - {name: a, resources: {limits: {nvidia.com/gpu: 2}}}
  - {name: b}
)");
  SECTION("defaults: GPU init containers only, no IPC_LOCK without RDMA, hostIPC left false") {
    json out = PatchAndRecheck(pod);
    CHECK(out["spec"]["hostIPC"] == false);
    CHECK(out["spec"]["initContainers"][0]["volumeMounts"][0]["mountPath"] == "/dev/shm");
    CHECK_FALSE(out["spec"]["initContainers"][1].contains("volumeMounts"));
    CHECK_FALSE(out["spec"]["initContainers"][0].contains("securityContext"));
    CHECK_FALSE(out["spec"]["containers"][0].contains("securityContext"));
    CHECK_FALSE(out["spec"]["containers"][1].contains("securityContext"));
  }
  SECTION("always: hostIPC replaced, IPC_LOCK on the GPU containers") {
    Policy p;
    p.host_ipc = HostIpcMode::kAlways;
    p.ipc_lock = IpcLockMode::kAlways;
    json out = PatchAndRecheck(pod, p);
    CHECK(out["spec"]["hostIPC"] == true);
    CHECK(out["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
    CHECK_FALSE(out["spec"]["containers"][1].contains("securityContext"));
    CHECK_FALSE(out["spec"]["initContainers"][0].contains("securityContext"));
  }
  SECTION("never / all") {
    Policy p;
    p.host_ipc = HostIpcMode::kNever;
    p.ipc_lock = IpcLockMode::kAll;
    p.init_container_mounts = ContainerSelection::kAll;
    json out = PatchAndRecheck(pod, p);
    CHECK(out["spec"]["hostIPC"] == false);
    CHECK(out["spec"]["initContainers"][1]["volumeMounts"][0]["mountPath"] == "/dev/shm");
    CHECK(out["spec"]["containers"][1]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
  }
}

TEST_CASE("BuildPodPatch adds neither hostIPC nor IPC_LOCK under baseline Pod Security", "[shm_patch]") {
  Policy p;
  p.namespaces = {NamespaceRule{{"*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kBaseline}};
  p.host_ipc = HostIpcMode::kAlways;
  json pod = Yaml(kBarePod);
  pod["spec"]["containers"][0]["env"] = json::array({{{"name", "NCCL_NET"}, {"value", "IB"}}});
  Evaluation ev = Evaluate(pod, p, {.namespace_name = "team-a"});
  json out = PatchAndRecheck(pod, p);
  CHECK_FALSE(out["spec"].contains("hostIPC"));
  CHECK_FALSE(out["spec"]["containers"][0].contains("securityContext"));
  CHECK(out["spec"]["volumes"][0]["name"] == "dshm");
  std::set<std::string> kept_out;
  for (const Finding& f : ev.AllFindings()) {
    if (f.check == Check::kPodSecurityLimitsPatch) kept_out.insert(f.Value("field") + " " + f.Value("level"));
  }
  CHECK(kept_out == std::set<std::string>{"hostIPC baseline", "IPC_LOCK baseline"});
  const std::vector<Finding> all = ev.AllFindings();
  const Finding* unlimited = test::FindingOf(all, Check::kMemoryLimitMissing);
  REQUIRE(unlimited != nullptr);
  CHECK(unlimited->Value("limit_source") == "container \"logger\" has no memory limit");
}

}  // namespace
}  // namespace shmguard
