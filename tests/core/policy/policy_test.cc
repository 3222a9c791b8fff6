// Policy: the documented defaults, namespace matching (fnmatch globs, first match wins) and the
// names of the enums as the config file writes them.
#include "core/policy/policy.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace shmguard {
namespace {

TEST_CASE("MatchNamespace takes the first rule whose glob matches", "[policy]") {
  Policy p;  // the defaults: kube-* off; ml-*, train-* enforce with annotations; * warn
  CHECK(MatchNamespace(p, "kube-system").mode == NamespaceMode::kOff);
  CHECK(MatchNamespace(p, "ml-vision").mode == NamespaceMode::kEnforce);
  CHECK(MatchNamespace(p, "ml-vision").require_annotations);
  CHECK(MatchNamespace(p, "train-llm").mode == NamespaceMode::kEnforce);
  CHECK(MatchNamespace(p, "team-a").mode == NamespaceMode::kWarn);
  CHECK_FALSE(MatchNamespace(p, "team-a").require_annotations);
  CHECK(MatchNamespace(p, "xml-a").mode == NamespaceMode::kWarn);  // a glob matches the whole name

  p.namespaces = {{{"gpu-?", "research"}, NamespaceMode::kEnforce, false, PodSecurityLevel::kBaseline},
                  {{"gpu-*"}, NamespaceMode::kOff, false, PodSecurityLevel::kPrivileged}};
  CHECK(MatchNamespace(p, "gpu-1").mode == NamespaceMode::kEnforce);
  CHECK(MatchNamespace(p, "gpu-1").pod_security == PodSecurityLevel::kBaseline);
  CHECK(MatchNamespace(p, "research").mode == NamespaceMode::kEnforce);
  CHECK(MatchNamespace(p, "gpu-12").mode == NamespaceMode::kOff);  // ? is one character
  // No rule matches: warn, with nothing required and the privileged level.
  NamespaceRule none = MatchNamespace(p, "default");
  CHECK(none.mode == NamespaceMode::kWarn);
  CHECK_FALSE(none.require_annotations);
  CHECK(none.pod_security == PodSecurityLevel::kPrivileged);
}

TEST_CASE("Policy defaults are the documented ones", "[policy]") {
  Policy p;
  CHECK(p.gpu_resources == std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/gpu.shared", "amd.com/gpu"});
  CHECK(p.mps_resources.empty());
  CHECK(p.rdma_resources ==
        std::vector<std::string>{"rdma/*", "vpc.amazonaws.com/efa", "mellanox.com/mlnx_sriov_rdma"});
  CHECK(p.host_ipc == HostIpcMode::kAuto);
  CHECK(p.ipc_lock == IpcLockMode::kAuto);
  CHECK(p.max_fraction_ppm == 500'000);
  CHECK(p.sizing.prefetch_factor == 2);
  CHECK(p.sizing.base_bytes == 64ll << 20);
  CHECK(p.sizing.nccl_connection_bytes == 4096 + 524288 + 4915200 + (4 << 20) + 4);
  CHECK(p.unannotated.mode == UnannotatedMode::kEstimate);
  CHECK(p.unannotated.fraction_ppm == 250'000);
}

TEST_CASE("HostIpcIn and IpcLockIn take a rule's own mode over the policy's", "[policy]") {
  Policy p;
  p.host_ipc = HostIpcMode::kNever;
  p.ipc_lock = IpcLockMode::kAlways;
  NamespaceRule plain;
  CHECK(HostIpcIn(p, plain) == HostIpcMode::kNever);
  CHECK(IpcLockIn(p, plain) == IpcLockMode::kAlways);
  NamespaceRule legacy;
  legacy.host_ipc = HostIpcMode::kAlways;
  legacy.ipc_lock = IpcLockMode::kNever;
  CHECK(HostIpcIn(p, legacy) == HostIpcMode::kAlways);
  CHECK(IpcLockIn(p, legacy) == IpcLockMode::kNever);
}

TEST_CASE("MatchesResource matches resource names against fnmatch globs", "[policy]") {
  const std::vector<std::string> globs = Policy().rdma_resources;
  struct Case {
    const char* resource;
    bool matches;
  };
  const Case cases[] = {
      {"rdma/hca_shared_devices_a", true},  // k8s-rdma-shared-dev-plugin's prefix
      {"rdma/ib", true},
      {"vpc.amazonaws.com/efa", true},
      {"mellanox.com/mlnx_sriov_rdma", true},
      {"vpc.amazonaws.com/efa2", false},  // a glob matches the whole name
      {"nvidia.com/gpu", false},
      {"rdma", false},
      {"", false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.resource);
    CHECK(MatchesResource(globs, c.resource) == c.matches);
  }
  CHECK_FALSE(MatchesResource({}, "rdma/ib"));
}

TEST_CASE("Pod Security levels parse from their names and nothing else", "[policy]") {
  for (auto level : {PodSecurityLevel::kPrivileged, PodSecurityLevel::kBaseline, PodSecurityLevel::kRestricted}) {
    CHECK(ParsePodSecurityLevel(PodSecurityLevelName(level)) == level);
  }
  for (const char* other : {"", "Baseline", "baseline ", "admin", "latest"}) {
    CAPTURE(other);
    CHECK_FALSE(ParsePodSecurityLevel(other).has_value());
  }
  // Stricter levels compare greater: the stricter of two applies (std::max).
  CHECK(PodSecurityLevel::kRestricted > PodSecurityLevel::kBaseline);
  CHECK(PodSecurityLevel::kBaseline > PodSecurityLevel::kPrivileged);
}

TEST_CASE("enum names are the config file's words", "[policy]") {
  CHECK(std::string(HostIpcModeName(HostIpcMode::kNever)) == "never");
  CHECK(std::string(ContainerSelectionName(ContainerSelection::kGpuContainers)) == "gpu-containers");
  CHECK(std::string(IpcLockModeName(IpcLockMode::kAuto)) == "auto");
  CHECK(std::string(IpcLockModeName(IpcLockMode::kAll)) == "all");
  CHECK(std::string(NamespaceModeName(NamespaceMode::kEnforce)) == "enforce");
  CHECK(std::string(UnannotatedModeName(UnannotatedMode::kLeave)) == "leave");
}

// Every value of an enum's list has a name of its own, and FindByName reads it back.
template <typename E, size_t N>
void CheckNamesRoundTrip(const E (&values)[N], const char* (*name)(E)) {
  std::set<std::string> names;
  for (E v : values) {
    CAPTURE(name(v));
    CHECK(FindByName(values, name, name(v)) == v);
    CHECK(names.insert(name(v)).second);
  }
  CHECK_FALSE(FindByName(values, name, "").has_value());
  CHECK_FALSE(FindByName(values, name, std::string(name(values[0])) + " ").has_value());
}

TEST_CASE("FindByName reads back every value of every policy enum", "[policy]") {
  CheckNamesRoundTrip(kHostIpcModes, HostIpcModeName);
  CheckNamesRoundTrip(kContainerSelections, ContainerSelectionName);
  CheckNamesRoundTrip(kIpcLockModes, IpcLockModeName);
  CheckNamesRoundTrip(kNamespaceModes, NamespaceModeName);
  CheckNamesRoundTrip(kPodSecurityLevels, PodSecurityLevelName);
  CheckNamesRoundTrip(kUnannotatedModes, UnannotatedModeName);
}

}  // namespace
}  // namespace shmguard
