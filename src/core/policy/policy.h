// The policy shmguard applies (README "Policy"): which namespaces it acts in and how, what it may add to
// a pod, and every constant of the sizing formula. Plain data with documented defaults; loading
// it from YAML lives in src/io/config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checks/checks.h"
#include "core/policy/tls_names.h"
#include "core/values/json_node.h"

namespace shmguard {

// hostIPC: kAuto never adds it for /dev/shm (a sized dshm replaces the node's /dev/shm, and
// nothing NCCL does inside one pod uses the IPC namespace: docs/sources.md §4); kAlways adds it
// to every pod shmguard patches; kNever never.
enum class HostIpcMode { kAuto, kAlways, kNever };
// IPC_LOCK: kAuto adds it to GPU containers that register host memory for RDMA and run as UID 0
// (the only ones where it takes effect and is needed: docs/sources.md §4); kAlways to every GPU
// container; kAll to every app container; kNever to none. The config also reads the older
// name "gpu-containers" as kAlways.
enum class IpcLockMode { kAuto, kAlways, kAll, kNever };
enum class ContainerSelection { kGpuContainers, kAll, kNever };
enum class NamespaceMode { kOff, kWarn, kEnforce };
enum class PodSecurityLevel { kPrivileged, kBaseline, kRestricted };
// How GPU pods without shmguard.io/num-workers are sized: kEstimate (the floor, raised to a
// fraction of the memory limit), kFloor (what NCCL and the base need, at least `minimum`),
// kLeave (not at all: they keep what they have).
enum class UnannotatedMode { kEstimate, kFloor, kLeave };

// Every value of each enum, in the order messages list them; their names are the *Name
// functions below, and nowhere else.
inline constexpr HostIpcMode kHostIpcModes[] = {HostIpcMode::kAuto, HostIpcMode::kAlways, HostIpcMode::kNever};
inline constexpr IpcLockMode kIpcLockModes[] = {IpcLockMode::kAuto, IpcLockMode::kAlways, IpcLockMode::kAll,
                                                IpcLockMode::kNever};
inline constexpr ContainerSelection kContainerSelections[] = {ContainerSelection::kGpuContainers,
                                                              ContainerSelection::kAll, ContainerSelection::kNever};
inline constexpr NamespaceMode kNamespaceModes[] = {NamespaceMode::kOff, NamespaceMode::kWarn, NamespaceMode::kEnforce};
inline constexpr PodSecurityLevel kPodSecurityLevels[] = {PodSecurityLevel::kPrivileged, PodSecurityLevel::kBaseline,
                                                          PodSecurityLevel::kRestricted};
inline constexpr UnannotatedMode kUnannotatedModes[] = {UnannotatedMode::kEstimate, UnannotatedMode::kFloor,
                                                        UnannotatedMode::kLeave};

// Constants of the plan (docs/sources.md §1). Every byte count is exact.
struct SizingConstants {
  // DataLoader prefetch_factor when the pod does not say. Default: 2 (PyTorch's default,
  // torch/utils/data/dataloader.py).
  int64_t prefetch_factor = 2;
  // Batches alive beside the W×P queued ones: the one the loop holds plus the previous one still
  // referenced while a worker refills (docs/sources.md §1, measured in tests/testdata/shm-truth). Default: 2.
  int64_t in_flight_extra = 2;
  // Safety factor in millionths. Default: 1200000 (×1.2: batch size variance, 4 KiB pages).
  int64_t safety_ppm = 1'200'000;
  // Bytes always reserved: the 64 MiB a container has by default (docs/sources.md §1). Default: 64Mi.
  int64_t base_bytes = 64ll << 20;
  // Floor when a pod runs >= 2 processes (NVIDIA's --shm-size=1g advice, docs/sources.md §1). Default: 1Gi.
  int64_t multi_gpu_floor_bytes = 1ll << 30;
  // One NCCL SHM connection: 4096 + 524288 + 4915200 + 4 MiB + 4 (docs/sources.md §1). Default: 9637892.
  int64_t nccl_connection_bytes = 9'637'892;
  // NCCL proxy ops pool per communicator, NCCL >= 2.28 (docs/sources.md §1). Default: 34210180.
  int64_t nccl_proxy_pool_bytes = 34'210'180;
};

// Sizing of GPU pods whose workload has no shmguard.io/num-workers: nobody writes DataLoader
// annotations before a Bus error has bitten them, so these get a safe size without them.
struct UnannotatedRule {
  UnannotatedMode mode = UnannotatedMode::kEstimate;  // Default: estimate
  // kEstimate: the share of a known memory limit /dev/shm gets, in millionths (never above
  // maxFractionOfMemoryLimit, never below the floor). Default: 250000 (a quarter).
  int64_t fraction_ppm = 250'000;
  // The floor is at least this many bytes. Default: 1Gi (NVIDIA's --shm-size=1g advice).
  int64_t minimum_bytes = 1ll << 30;
};

// Sizes learned from what a workload's pods used (shm_profile.h).
struct ObservedRule {
  // The size an observed peak asks for: peak × margin, in millionths. Sampling every second can
  // miss a burst between samples, and a Bus error ends the run. Default: 1500000 (×1.5).
  int64_t margin_ppm = 1'500'000;
  // A ShmProfile not observed for this many days is deleted by the node agents (one sweep a day
  // each, at a random time), so profiles of workloads that are gone do not pile up: one per Job
  // name otherwise. 1 to 3650. Default: 30.
  int64_t retention_days = 30;
};

struct NamespaceRule {
  std::vector<std::string> match;  // fnmatch(3) globs on the namespace name, e.g. "ml-*"
  NamespaceMode mode = NamespaceMode::kWarn;
  // GPU pods without shmguard.io/num-workers and shmguard.io/batch-bytes are denied.
  // Default: false.
  bool require_annotations = false;
  // The namespace's Pod Security level; hostIPC and IPC_LOCK are only added under privileged
  // (docs/sources.md §5). Default: privileged.
  PodSecurityLevel pod_security = PodSecurityLevel::kPrivileged;
  // Checks exempted in these namespaces (checks.h): reported as suppressed, never counted.
  // Default: none.
  std::vector<Check> ignore = {};
  // The node agent may grow a running pod's /dev/shm in place (the pod's resize subresource) in
  // these namespaces, as the namespace label shmguard.io/grow-in-place=true does. Default: false.
  bool grow_in_place = false;
  // The node agent may delete the files in a pod's /dev/shm that no process of the pod holds open
  // or maps, while none of its containers runs (leaked_segments.h), as the pod annotation
  // shmguard.io/reclaim-leaked: "true" lets it for one pod. Default: false.
  bool reclaim_leaked_segments = false;
  // The policy's hostIPC and ipcLock for these namespaces, when the rule sets them (a namespace
  // whose pods relied on the old patch keeps it with hostIPC: always). Default: the policy's.
  std::optional<HostIpcMode> host_ipc = std::nullopt;
  std::optional<IpcLockMode> ipc_lock = std::nullopt;
};

// The webhook port's TLS settings as the config file's `tls:` section gives them; unset fields
// leave the flags' values (or their defaults) in force. The core does not read them: the server
// applies them to every handshake, re-read with the file.
struct TlsPolicy {
  std::optional<TlsVersion> min_version;   // tls.minVersion: VersionTLS12 | VersionTLS13
  std::vector<std::string> cipher_suites;  // tls.cipherSuites: IANA names (tls_names.h); empty: unset
};

struct Policy {
  // Extended resources that count as GPUs. nvidia.com/gpu.shared is what NVIDIA's device plugin
  // names replicated GPUs (time-slicing or MPS) with renameByDefault (k8s-device-plugin
  // api/config/v1/replicas.go). Default: nvidia.com/gpu, nvidia.com/gpu.shared, amd.com/gpu.
  std::vector<std::string> gpu_resources = {"nvidia.com/gpu", "nvidia.com/gpu.shared", "amd.com/gpu"};
  // GPU resources served through NVIDIA MPS: the device plugin mounts the MPS daemon's tmpfs at
  // the container's /dev/shm (k8s-device-plugin internal/plugin/mps.go), so a pod requesting
  // one gets no dshm, which would be mounted over it. The pod spec cannot tell MPS from
  // time-slicing (both are nvidia.com/gpu.shared), the node can: the node agent reports it.
  // Default: none.
  std::vector<std::string> mps_resources = {};
  // Device-plugin resources that bring RDMA into a container (fnmatch(3) globs): a GPU
  // container requesting one registers host memory for RDMA, which RLIMIT_MEMLOCK bounds
  // unless it has CAP_IPC_LOCK (docs/sources.md §4). Default: rdma/* (k8s-rdma-shared-dev-plugin's
  // prefix), vpc.amazonaws.com/efa (AWS's EFA device plugin), mellanox.com/mlnx_sriov_rdma
  // (sriov-network-device-plugin's RDMA example; SR-IOV names are the operator's choice).
  std::vector<std::string> rdma_resources = {"rdma/*", "vpc.amazonaws.com/efa", "mellanox.com/mlnx_sriov_rdma"};
  // DeviceClasses whose devices are GPUs, for pods that get them through resource claims (DRA):
  // NVIDIA's DRA driver's GPUs and MIG devices, AMD's and Intel's.
  std::vector<std::string> gpu_device_classes = {"gpu.nvidia.com", "mig.nvidia.com", "gpu.amd.com", "gpu.intel.com"};
  HostIpcMode host_ipc = HostIpcMode::kAuto;  // Default: auto (never added for /dev/shm)
  IpcLockMode ipc_lock = IpcLockMode::kAuto;  // Default: auto (root GPU containers that use RDMA)
  // Which init containers get the /dev/shm mount. Default: gpu-containers (those requesting GPUs).
  ContainerSelection init_container_mounts = ContainerSelection::kGpuContainers;
  // Largest share of the memory limit the dshm volume may take, in millionths. Default: 500000.
  int64_t max_fraction_ppm = 500'000;
  SizingConstants sizing;
  UnannotatedRule unannotated;
  ObservedRule observed;
  // First match wins; a namespace that matches nothing is treated as {mode: warn}.
  // Default: kube-* off; ml-*, train-* enforce + requireAnnotations; * warn (README "Policy").
  std::vector<NamespaceRule> namespaces = DefaultNamespaceRules();
  TlsPolicy tls;

  static std::vector<NamespaceRule> DefaultNamespaceRules();
};

// The first rule whose glob matches `ns`, or a {mode: warn} rule when none does.
NamespaceRule MatchNamespace(const Policy& policy, std::string_view ns);

// The hostIPC and ipcLock modes in force under `rule`: its own when it sets them, else the
// policy's.
HostIpcMode HostIpcIn(const Policy& policy, const NamespaceRule& rule);
IpcLockMode IpcLockIn(const Policy& policy, const NamespaceRule& rule);

// True when `resource` matches one of `globs` (fnmatch(3)): "rdma/hca_a" matches "rdma/*".
bool MatchesResource(const std::vector<std::string>& globs, std::string_view resource);
// The first extended resource (a name with a '/': never cpu or memory) of `lists` (a container's
// limits, then its requests: name -> quantity) that one of `globs` matches; "" when none does.
std::string FindResource(std::initializer_list<JsonNode> lists, const std::vector<std::string>& globs);

// Names as they appear in the config file: "auto", "gpu-containers", "enforce", "baseline"...
const char* HostIpcModeName(HostIpcMode m);
const char* IpcLockModeName(IpcLockMode m);
const char* ContainerSelectionName(ContainerSelection s);
const char* NamespaceModeName(NamespaceMode m);
const char* PodSecurityLevelName(PodSecurityLevel l);
// "privileged", "baseline" or "restricted" (the values of pod-security.kubernetes.io/enforce);
// nullopt for anything else.
std::optional<PodSecurityLevel> ParsePodSecurityLevel(std::string_view name);
const char* UnannotatedModeName(UnannotatedMode m);

}  // namespace shmguard
