// AddsIpcLock, NeedsMemlockAsNonRoot and AddsMemlockUlimit over containers read with
// ReadPodFacts: what brings RDMA (a resource, the env), whom the container runs as, and each
// ipcLock mode (docs/sources.md §6).
#include "core/patch/ipc_lock.h"

#include <catch2/catch.hpp>
#include <string>

#include "test_util.h"

namespace shmguard {
namespace {

// A pod with one container: its resources and env, its securityContext, the pod's.
std::string Pod(const std::string& container, const std::string& pod_security_context = "{}") {
  return "apiVersion: v1\nkind: Pod\nspec:\n  securityContext: " + pod_security_context +
         "\n  containers:\n  - name: t\n" + container;
}

TEST_CASE("ReadPodFacts finds what brings RDMA into a container, a resource before the env", "[ipc_lock]") {
  struct Case {
    const char* name;
    std::string container;
    const char* rdma;
  };
  const Case cases[] = {
      {"shared HCA resource", "    resources: {limits: {rdma/hca_shared_devices_a: 1}}\n",
       "requests rdma/hca_shared_devices_a"},
      {"EFA, in requests", "    resources: {requests: {vpc.amazonaws.com/efa: 4}}\n", "requests vpc.amazonaws.com/efa"},
      {"resource before env", "    resources: {limits: {rdma/ib: 1}}\n    env: [{name: NCCL_NET, value: IB}]\n",
       "requests rdma/ib"},
      {"NCCL_NET=IB", "    env: [{name: NCCL_NET, value: IB}]\n", "env NCCL_NET=IB"},
      {"NCCL_NET compared without case", "    env: [{name: NCCL_NET, value: ib}]\n", "env NCCL_NET=ib"},
      {"NCCL_NET=Socket", "    env: [{name: NCCL_NET, value: Socket}]\n", ""},
      {"NCCL_IB_HCA", "    env: [{name: NCCL_IB_HCA, value: \"=mlx5_0:1\"}]\n", "env NCCL_IB_HCA==mlx5_0:1"},
      {"NCCL_IB_DISABLE=1 turns IB off",
       "    env: [{name: NCCL_NET, value: IB}, {name: NCCL_IB_DISABLE, value: \"1\"}]\n", ""},
      {"a net plugin", "    env: [{name: NCCL_NET_PLUGIN, value: ofi}]\n", "env NCCL_NET_PLUGIN=ofi"},
      {"net plugin none", "    env: [{name: NCCL_NET_PLUGIN, value: NONE}]\n", ""},
      {"libfabric EFA", "    env: [{name: FI_PROVIDER, value: efa}]\n", "env FI_PROVIDER=efa"},
      {"libfabric TCP", "    env: [{name: FI_PROVIDER, value: tcp}]\n", ""},
      {"UCX on an RDMA port", "    env: [{name: UCX_NET_DEVICES, value: \"mlx5_0:1,mlx5_1:1\"}]\n",
       "env UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1"},
      {"UCX on an Ethernet device", "    env: [{name: UCX_NET_DEVICES, value: eth0}]\n", ""},
      {"a long value is cut", "    env: [{name: NCCL_IB_HCA, value: " + std::string(100, 'x') + "}]\n", nullptr},
      {"nothing", "    resources: {limits: {nvidia.com/gpu: 1}}\n", ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    PodFacts f = test::OnlyFacts(Pod(c.container));
    REQUIRE(f.containers.size() == 1);
    if (c.rdma) {
      CHECK(f.containers[0].rdma == c.rdma);
    } else {
      CHECK(f.containers[0].rdma == "env NCCL_IB_HCA=" + std::string(64, 'x') + "...");
    }
  }
}

TEST_CASE("ReadPodFacts reads whom a container runs as, its own fields over the pod's", "[ipc_lock]") {
  struct Case {
    const char* container_sc;
    const char* pod_sc;
    RunAs run_as;
    const char* source;
  };
  const Case cases[] = {
      {"{}", "{}", RunAs::kUnknown, "runAsUser unset"},
      {"{runAsUser: 0}", "{}", RunAs::kRoot, "runAsUser 0"},
      {"{}", "{runAsUser: 0}", RunAs::kRoot, "runAsUser 0 (pod)"},
      {"{runAsUser: 1000}", "{runAsUser: 0}", RunAs::kNonRoot, "runAsUser 1000"},
      {"{runAsUser: 0}", "{runAsUser: 1000}", RunAs::kRoot, "runAsUser 0"},
      {"{}", "{runAsNonRoot: true}", RunAs::kNonRoot, "runAsNonRoot: true (pod)"},
      {"{runAsNonRoot: false}", "{runAsNonRoot: true}", RunAs::kUnknown, "runAsUser unset"},
      {"{runAsNonRoot: true}", "{}", RunAs::kNonRoot, "runAsNonRoot: true"},
      {"{runAsUser: null}", "{runAsUser: 65534}", RunAs::kNonRoot, "runAsUser 65534 (pod)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.container_sc, c.pod_sc);
    PodFacts f = test::OnlyFacts(Pod(std::string("    securityContext: ") + c.container_sc + "\n", c.pod_sc));
    CHECK(f.containers[0].run_as == c.run_as);
    CHECK(f.containers[0].run_as_source == c.source);
  }
  auto bad = test::ReadOnlyFacts(Pod("    securityContext: {runAsUser: \"0\"}\n"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().where.pointer == "/spec/containers/0/securityContext/runAsUser");
}

TEST_CASE("AddsIpcLock adds the capability where it takes effect, by mode", "[ipc_lock]") {
  ContainerFacts gpu;
  gpu.gpus = 1;
  ContainerFacts rdma_root = gpu, rdma_image_user = gpu, rdma_non_root = gpu, rdma_cpu;
  rdma_root.rdma = rdma_image_user.rdma = rdma_non_root.rdma = rdma_cpu.rdma = "requests rdma/ib";
  rdma_root.run_as = RunAs::kRoot;
  rdma_image_user.run_as = RunAs::kUnknown;
  rdma_non_root.run_as = RunAs::kNonRoot;
  ContainerFacts cpu;
  struct Case {
    const char* name;
    const ContainerFacts& c;
    bool automatic, always, all, memlock_auto, non_root;
  };
  const Case cases[] = {
      {"GPU, no RDMA", gpu, false, true, true, false, false},
      {"GPU, RDMA, root", rdma_root, true, true, true, true, false},
      {"GPU, RDMA, the image's user", rdma_image_user, true, true, true, true, false},
      {"GPU, RDMA, non-root", rdma_non_root, false, true, true, true, true},
      {"RDMA without a GPU", rdma_cpu, false, false, true, false, false},
      {"no GPU", cpu, false, false, true, false, false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    CHECK(AddsIpcLock(c.c, IpcLockMode::kAuto) == c.automatic);
    CHECK(AddsIpcLock(c.c, IpcLockMode::kAlways) == c.always);
    CHECK(AddsIpcLock(c.c, IpcLockMode::kAll) == c.all);
    CHECK_FALSE(AddsIpcLock(c.c, IpcLockMode::kNever));
    CHECK(AddsMemlockUlimit(c.c, IpcLockMode::kAuto) == c.memlock_auto);  // a ulimit holds for any user
    CHECK(AddsMemlockUlimit(c.c, IpcLockMode::kAlways) == c.always);
    CHECK(NeedsMemlockAsNonRoot(c.c) == c.non_root);
  }
  CHECK(IpcLockReason(rdma_root, IpcLockMode::kAuto) == "requests rdma/ib");
  CHECK(IpcLockReason(rdma_root, IpcLockMode::kAlways) == "policy ipcLock: always");
}

TEST_CASE("ReadPodFacts finds an MPS resource only where the policy lists it", "[ipc_lock]") {
  const std::string pod = R"(
apiVersion: v1
kind: Pod
spec:
  containers:
  - {name: sidecar}
  - {name: infer, resources: {limits: {nvidia.com/gpu.shared: 1}}}
)";
  PodFacts plain = test::OnlyFacts(pod);
  CHECK(plain.gpus == 1);  // a shared GPU is a GPU
  CHECK(plain.mps_resource.empty());
  const nlohmann::json object = test::Yaml(pod);  // the templates view it
  Workload w = test::OnlyTemplate(object);
  Policy mps;
  mps.mps_resources = {"nvidia.com/gpu.shared"};
  auto f = ReadPodFacts(w.templates[0], mps);
  REQUIRE(f.has_value());
  CHECK(f->mps_resource == "nvidia.com/gpu.shared");
  CHECK(f->mps_container == "infer");
  CHECK(f->mps_pointer == "/spec/containers/1/resources");
}

}  // namespace
}  // namespace shmguard
