// Where IPC_LOCK is needed and where it takes effect (docs/sources.md §4). CUDA pins host memory
// (pin_memory, cudaHostAlloc, cudaHostRegister) without any RLIMIT_MEMLOCK check, measured on an
// H100; what RLIMIT_MEMLOCK bounds in a GPU pod is RDMA registration of host memory (NCCL over
// InfiniBand or RoCE, AWS EFA, UCX), which CAP_IPC_LOCK lifts. A capability in
// securityContext.capabilities.add reaches the effective set only of a process that runs as
// UID 0. Pure functions of a container's facts; the patch (shm_patch.h) and the findings use them.
#pragma once

#include <string>

#include "core/facts/pod_facts.h"
#include "core/policy/policy.h"

namespace shmguard {

// True when `c` gets IPC_LOCK under `mode` (app containers only; whether it already has it is
// the patch's business):
//   - kAuto: a GPU container that registers host memory for RDMA (c.rdma) and runs as root or
//     as a user the spec leaves to the image (c.run_as != kNonRoot), where the capability
//     takes effect;
//   - kAlways: every GPU container; kAll: every container; kNever: none.
bool AddsIpcLock(const ContainerFacts& c, IpcLockMode mode);

// True when `c` is a GPU container that registers host memory for RDMA but runs as non-root:
// IPC_LOCK would not take effect there, and only a higher RLIMIT_MEMLOCK helps
// (ipc-lock-non-root).
bool NeedsMemlockAsNonRoot(const ContainerFacts& c);

// True when a Compose service with `c` as its container gets `ulimits: {memlock: -1}` under
// `mode`: the kAuto rule without the user's, since a ulimit raises RLIMIT_MEMLOCK for every
// user (Docker's --ulimit), where a capability would not.
bool AddsMemlockUlimit(const ContainerFacts& c, IpcLockMode mode);

// Why `c` gets IPC_LOCK under `mode`, for the findings: c.rdma under kAuto ("requests
// rdma/hca_a", "env NCCL_NET=IB"), else "policy ipcLock: always" (or all).
std::string IpcLockReason(const ContainerFacts& c, IpcLockMode mode);

}  // namespace shmguard
