// The RFC 6902 operations that give a pod template the planned dshm volume, mounts, IPC_LOCK, hostIPC and annotations
// (docs/sources.md §3, §4). Operations are relative to the object the template was found in and never depend on each
// other's order except appends to the same list.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/facts/pod_facts.h"
#include "core/patch/ipc_lock.h"
#include "core/policy/policy.h"
#include "core/values/json_patch.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

struct PatchOptions {
  int64_t required_bytes = 0;                 // the planned sizeLimit
  bool host_ipc = false;                      // set spec.hostIPC: true
  IpcLockMode ipc_lock = IpcLockMode::kAuto;  // which containers get IPC_LOCK (ipc_lock.h)
  ContainerSelection init_container_mounts = ContainerSelection::kGpuContainers;
  bool shm = true;               // write the volume, its size and the mounts (false: exempted)
  bool describe_changes = true;  // fill PodPatch::changes
  // Annotations the pod template must carry (shmguard.io/plan, and on controllers the
  // effective sizing annotations). Only missing or different ones produce operations.
  std::map<std::string, std::string> annotations;
};

struct PodPatch {
  JsonPatch ops;                     // RFC 6902 operations
  std::vector<std::string> changes;  // one sentence per change, for people
  // What the operations give, for the findings that go with them:
  bool volume = false;                       // the /dev/shm volume added, or its size raised
  std::string shm_pointer;                   // where /dev/shm falls short; "" when the patch leaves it
  std::vector<std::string> mounted, locked;  // containers given the /dev/shm mount, IPC_LOCK
  std::string lock_pointer;                  // the first container's capabilities that lack IPC_LOCK
  std::string lock_reason, lock_user;        // why the first of `locked` gets it, whom it runs as
  bool host_ipc = false;                     // hostIPC: true set
  // True when the operations change only annotations: the pod's /dev/shm, mounts and
  // privileges are already what the plan asks.
  bool AnnotationsOnly() const { return shm_pointer.empty() && locked.empty() && !host_ipc; }
};

// The operations that bring `t` to the plan. An already conforming template gives no
// operations (idempotence). Fails with kInvalidInput naming the pointer when a field the patch
// must extend has the wrong type (e.g. volumeMounts not a list).
// Reads nothing of the pod spec but `facts` (what ReadPodFacts found in it).
// REQUIRES: `mount.kind != kOther`; `facts` read from `t`; `mount` is `facts.shm`, or what the
// workload's operator mounts when that is nothing.
Result<PodPatch> BuildPodPatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                               const PatchOptions& options);

}  // namespace shmguard
