// A /dev/shm size against the pod's memory limit (docs/sources.md §4): memory-backed pages count
// against the same cgroup as the processes, so a size over the limit, or over the policy's
// maxFractionOfMemoryLimit of it, is refused. Shared by the webhook, the audit and shmguard plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/checks/checks.h"
#include "core/facts/pod_facts.h"
#include "core/policy/policy.h"

namespace shmguard {

// What a size is, for the memory findings: a plan's need ("dshm", or "/dev/shm" for a Compose
// service) or an unannotated GPU pod's floor.
struct ShmUse {
  std::string_view volume = "dshm";  // Default: dshm
  bool floor = false;                // the floor of an estimate, not a plan
  bool compose = false;              // a Compose service: shm_size, host memory
  bool server = false;               // an inference server's plan: its flags size it
};

// A shm-over-memory-limit finding when `required` bytes do not fit `facts`' memory limit: over
// it (numbers required_bytes, memory_limit_bytes) or over the policy's maxFractionOfMemoryLimit
// of it (also max_fraction_ppm, left_bytes); nullopt when they fit or there is no limit. Exact
// integers. Points at the memory limit (facts.memory_limit_pointer).
std::optional<Finding> MemoryLimitDenial(int64_t required, const PodFacts& facts, const Policy& policy, ShmUse use);

// A planned size against the pod's memory limit: `denial` when it does not fit; else
// `headroom` (memory-headroom: what the limit leaves the processes) or `missing`
// (memory-limit-missing: no limit at all).
struct LimitCheck {
  std::optional<Finding> denial, headroom, missing;
};
LimitCheck CheckLimit(int64_t required, const PodFacts& facts, const Policy& policy, ShmUse use);

}  // namespace shmguard
