// What a pod template has at /dev/shm today, and the RFC 6902 operations that give it the
// planned dshm volume, mounts, IPC_LOCK, hostIPC and annotations (docs/sources.md §3, §4). Operations are
// relative to the object the template was found in and never depend on each other's order
// except appends to the same list.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shmguard/json_patch.h"
#include "shmguard/pod_facts.h"
#include "shmguard/pod_templates.h"
#include "shmguard/policy.h"
#include "shmguard/result.h"

namespace shmguard {

inline constexpr const char* kShmPath = "/dev/shm";
inline constexpr const char* kShmVolumeName = "dshm";

enum class ShmMountKind {
  kNone,            // nothing at /dev/shm: the container runtime's 64 MiB
  kMemoryEmptyDir,  // an emptyDir {medium: Memory}: shmguard can size it
  kOther,           // hostPath, disk emptyDir, PVC...: reported, never overwritten
};

struct ShmMount {
  ShmMountKind kind = ShmMountKind::kNone;
  std::string volume_name;  // the volume at /dev/shm, or an unmounted memory emptyDir "dshm"
  std::string volume_pointer;  // where that volume is declared, "" when it is not
  JsonNode volume;          // that volume, absent when not declared
  std::optional<int64_t> size_limit;  // kMemoryEmptyDir: sizeLimit in bytes when set (> 0)
  std::string description;  // for people: "emptyDir Memory 1Gi", "hostPath /dev/shm"
  bool implicit = false;    // mounted by the workload's operator on its first container, not
                            // written in the template (KubeRay's shared-mem)
};

// Finds what is mounted at /dev/shm in the containers of `facts` (read from `t`). Fails with
// kInvalidInput naming the pointer when volumes or mounts have the wrong shape, or when
// containers mount different volumes at /dev/shm (NCCL needs every rank of a pod on the same
// /dev/shm).
Result<ShmMount> FindShmMount(const PodTemplate& t, const PodFacts& facts);

// True when `container` mounts something at /dev/shm (trailing slashes ignored).
bool MountsShm(JsonNode container);

struct PatchOptions {
  int64_t required_bytes = 0;  // the planned sizeLimit
  bool host_ipc = false;       // set spec.hostIPC: true
  ContainerSelection ipc_lock = ContainerSelection::kGpuContainers;  // kNever: no IPC_LOCK
  ContainerSelection init_container_mounts = ContainerSelection::kGpuContainers;
  bool describe_changes = true;  // fill PodPatch::changes
  // Annotations the pod template must carry (shmguard.io/plan, and on controllers the
  // effective sizing annotations). Only missing or different ones produce operations.
  std::map<std::string, std::string> annotations;
};

struct PodPatch {
  JsonPatch ops;                      // RFC 6902 operations
  std::vector<std::string> changes;  // one sentence per change, for people
};

// The operations that bring `t` to the plan. An already conforming template gives no
// operations (idempotence). Fails with kInvalidInput naming the pointer when a field the patch
// must extend has the wrong type (e.g. volumeMounts not a list).
// REQUIRES: `mount.kind != kOther`; `facts` read from `t`.
Result<PodPatch> BuildPodPatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                               const PatchOptions& options);

}  // namespace shmguard
