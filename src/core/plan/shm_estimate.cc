// EstimateShm: the floor and the memory-limit share of an unannotated GPU pod.
#include "core/plan/shm_estimate.h"

#include <algorithm>

#include "core/values/human_units.h"
#include "core/values/int128.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

constexpr int64_t kMiB = 1 << 20;

// limit × ppm / 10^6, rounded down to a whole MiB (a share never rounds up past its fraction).
int64_t ShareOf(int64_t limit, int64_t ppm) {
  Int128 share = static_cast<Int128>(limit) * ppm / 1'000'000;
  return static_cast<int64_t>(share / kMiB * kMiB);
}

// limit × ppm / 10^6 rounded down: the most maxFractionOfMemoryLimit allows.
int64_t Cap(int64_t limit, int64_t ppm) { return static_cast<int64_t>(static_cast<Int128>(limit) * ppm / 1'000'000); }

}  // namespace

Result<ShmEstimate> EstimateShm(ShmInputs pod, std::optional<int64_t> memory_limit, const Policy& policy) {
  pod.workers = 0;  // the floor: no DataLoader term
  pod.batch_bytes = 0;
  const bool share_of_limit = policy.unannotated.mode != UnannotatedMode::kFloor && memory_limit;
  const int64_t limit = memory_limit.value_or(0);
  const int64_t wanted = share_of_limit ? ShareOf(limit, policy.unannotated.fraction_ppm) : 0;
  const int64_t cap = share_of_limit ? Cap(limit, policy.max_fraction_ppm) : 0;
  auto plan = PlanShm(pod, policy.sizing);
  if (!plan) return plan.error();
  ShmEstimate e;
  e.floor_plan = *plan;
  e.floor_bytes = std::max(policy.unannotated.minimum_bytes, plan->required_bytes);
  e.estimate_bytes = e.floor_bytes;
  if (policy.unannotated.mode == UnannotatedMode::kFloor) {
    e.basis = "the floor (policy unannotated.mode: floor)";
    return e;
  }
  if (!memory_limit) {
    e.basis = "the floor (no memory limit to take a share of)";
    return e;
  }
  const std::string share = FormatPpm(policy.unannotated.fraction_ppm * 100) + "%";
  const std::string of_limit = " of the " + FormatBytes(limit) + " memory limit";
  if (wanted <= e.floor_bytes) {
    e.basis = "the floor (" + share + of_limit + " is less)";
  } else if (wanted > cap) {
    e.estimate_bytes = std::max(e.floor_bytes, cap);
    e.basis = FormatPpm(policy.max_fraction_ppm * 100) + "%" + of_limit + " (maxFractionOfMemoryLimit)";
  } else {
    e.estimate_bytes = wanted;
    e.basis = share + of_limit;
  }
  return e;
}

}  // namespace shmguard
