// EstimateShm: the floor and the memory-limit share of an unannotated GPU pod.
#include "shmguard/shm_estimate.h"

#include <algorithm>

#include "shmguard/int128.h"
#include "shmguard/quantity.h"

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

Result<ShmEstimate> EstimateShm(const PodFacts& facts, const Policy& policy) {
  auto plan = PlanShm(PodShmInputs(facts), policy.sizing);
  if (!plan) return plan.error();
  ShmEstimate e;
  e.floor_plan = *plan;
  e.floor_bytes = std::max(policy.unannotated.minimum_bytes, plan->required_bytes);
  e.estimate_bytes = e.floor_bytes;
  if (policy.unannotated.mode == UnannotatedMode::kFloor) {
    e.basis = "the floor (policy unannotated.mode: floor)";
    return e;
  }
  if (!facts.memory_limit_bytes) {
    e.basis = "the floor (no memory limit to take a share of)";
    return e;
  }
  const int64_t limit = *facts.memory_limit_bytes;
  const std::string share = FormatPpm(policy.unannotated.fraction_ppm * 100) + "%";
  const int64_t wanted = ShareOf(limit, policy.unannotated.fraction_ppm);
  const int64_t cap = Cap(limit, policy.max_fraction_ppm);
  if (wanted <= e.floor_bytes) {
    e.basis = "the floor (" + share + " of the " + FormatBytes(limit) + " memory limit is less)";
  } else if (wanted > cap) {
    e.estimate_bytes = std::max(e.floor_bytes, cap);
    e.basis = FormatPpm(policy.max_fraction_ppm * 100) + "% of the " + FormatBytes(limit) +
              " memory limit (maxFractionOfMemoryLimit)";
  } else {
    e.estimate_bytes = wanted;
    e.basis = share + " of the " + FormatBytes(limit) + " memory limit";
  }
  return e;
}

}  // namespace shmguard
