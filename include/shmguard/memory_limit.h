// A /dev/shm size against the pod's memory limit (docs/sources.md §4): memory-backed pages count
// against the same cgroup as the processes, so a size over the limit, or over the policy's
// maxFractionOfMemoryLimit of it, is refused. Shared by the webhook, the audit and shmguard plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shmguard/pod_facts.h"
#include "shmguard/policy.h"

namespace shmguard {

// Why `required` bytes of `what` ("dshm needs", "floor of a GPU pod") do not fit `facts`'
// memory limit, ending in `remedy`; "" when they fit or there is no limit. Exact integers:
// "memory limit 16Gi (sum of container limits) is below the 20Gi dshm needs: raise the limit".
std::string MemoryLimitDenial(int64_t required, const std::string& what, const PodFacts& facts, const Policy& policy,
                              const std::string& remedy);

// A planned size against the pod's memory limit: `denial` when it does not fit (over the
// limit, or over the policy's maxFractionOfMemoryLimit of it); else `left`, what the limit
// leaves the processes, or `warning` when there is no limit. `what` names the volume: "dshm",
// or "/dev/shm" for a Compose service (`compose`).
struct LimitCheck {
  std::string denial, left, warning;
};
LimitCheck CheckLimit(int64_t required, const PodFacts& facts, const Policy& policy, std::string_view what,
                      bool compose = false);

}  // namespace shmguard
