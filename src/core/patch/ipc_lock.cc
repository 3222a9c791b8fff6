// AddsIpcLock and its siblings: the rules of ipc_lock.h over a container's facts.
#include "core/patch/ipc_lock.h"

namespace shmguard {

bool AddsIpcLock(const ContainerFacts& c, IpcLockMode mode) {
  switch (mode) {
    case IpcLockMode::kAuto: return c.gpus > 0 && !c.rdma.empty() && c.run_as != RunAs::kNonRoot;
    case IpcLockMode::kAlways: return c.gpus > 0;
    case IpcLockMode::kAll: return true;
    case IpcLockMode::kNever: return false;
  }
  return false;
}

bool NeedsMemlockAsNonRoot(const ContainerFacts& c) {
  return !c.init && c.gpus > 0 && !c.rdma.empty() && c.run_as == RunAs::kNonRoot;
}

bool AddsMemlockUlimit(const ContainerFacts& c, IpcLockMode mode) {
  if (mode == IpcLockMode::kAuto) return c.gpus > 0 && !c.rdma.empty();
  return AddsIpcLock(c, mode);
}

std::string IpcLockReason(const ContainerFacts& c, IpcLockMode mode) {
  if (mode == IpcLockMode::kAuto) return c.rdma;
  return std::string("policy ipcLock: ") + IpcLockModeName(mode);
}

}  // namespace shmguard
