// The /dev/shm a GPU pod gets when nobody said how its DataLoader is set up (no
// shmguard.io/num-workers): a floor that is known to be needed (NCCL and the base, as the plan
// computes them, at least the policy's minimum) and an estimate above it (a share of the memory
// limit). Pure arithmetic over the pod's plan inputs and memory limit; the verdict is evaluation.h's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/plan/shm_plan.h"
#include "core/policy/policy.h"
#include "core/values/result.h"

namespace shmguard {

struct ShmEstimate {
  ShmPlan floor_plan;       // the plan with no DataLoader term (workers = 0)
  int64_t floor_bytes = 0;  // max(policy minimum, floor_plan.required_bytes)
  // What a pod with no /dev/shm of its own gets: kFloor -> floor_bytes; kEstimate -> max(floor,
  // fraction × memory limit rounded down to a MiB), never above maxFractionOfMemoryLimit × limit;
  // floor_bytes when the limit is unknown. Only meaningful when the floor fits (FloorFits).
  int64_t estimate_bytes = 0;
  // How estimate_bytes was reached, for reasons and the plan annotation:
  // "25% of the 64Gi memory limit", "the floor (no memory limit to take a share of)".
  std::string basis;
};

// Computes the floor and the estimate of a pod under `policy.unannotated`: `pod` is its side of
// the plan's inputs (processes, nodes, NCCL: PodShmInputs; its DataLoader terms are ignored),
// `memory_limit` its memory limit (nullopt: unknown or unlimited). Fails with kInvalidInput when
// the floor's arithmetic overflows (only with absurd policy constants or process counts).
Result<ShmEstimate> EstimateShm(ShmInputs pod, std::optional<int64_t> memory_limit, const Policy& policy);

}  // namespace shmguard
