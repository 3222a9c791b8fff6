// The /dev/shm size one pod needs (docs/sources.md §1): exact integer bytes, every step
// overflow-checked (the arithmetic in words is io/finding_text.h's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/checks/checks.h"
#include "core/policy/policy.h"
#include "core/values/result.h"

namespace shmguard {

// The ranges of the inputs, wherever they are read from (annotations, `shmguard plan`'s flags,
// the policy's default prefetch factor).
inline constexpr int64_t kMaxWorkers = 4096;
inline constexpr int64_t kMaxPrefetchFactor = 1024;
inline constexpr int64_t kMaxProcs = 1024;
inline constexpr int64_t kMaxNodes = 1'000'000;

struct ShmInputs {
  int64_t workers = 0;          // W: DataLoader num_workers per process, 0..kMaxWorkers
  int64_t prefetch_factor = 2;  // P: DataLoader prefetch_factor, 1..kMaxPrefetchFactor
  int64_t batch_bytes = 0;      // B: bytes of one collated batch, >= 0
  int64_t procs = 1;            // N: training processes in the pod, 1..kMaxProcs
  int64_t nodes = 1;            // pods training together, 1..kMaxNodes; > 1 adds the NCCL proxy pool
  bool nccl_shm = true;         // false: NCCL_SHM_DISABLE=1, no NCCL SHM transport term
  int64_t server_bytes = 0;     // an inference server's own segments (server_plan.h), >= 0
};

struct ShmPlan {
  ShmInputs inputs;              // what it was computed from
  int64_t dataloader_bytes = 0;  // N × (W×P + inFlightExtra) × B, 0 when W = 0
  int64_t nccl_shm_bytes = 0;    // N × 2 × (N == 2 ? 1 : 2) × connection bytes, when N >= 2
                                 // and the transport is on
  int64_t nccl_proxy_bytes = 0;  // N × proxy pool bytes, when nodes > 1
  int64_t server_bytes = 0;      // the server's segments, as given
  int64_t base_bytes = 0;        // the policy's base
  int64_t safe_bytes = 0;        // round_up_MiB(sum × safety)
  int64_t required_bytes = 0;    // safe_bytes, at least the floor when N >= 2
  bool floor_applied = false;    // the multi-GPU floor decided the size
};

// Computes the plan. Fails with kInvalidInput when an intermediate value exceeds 2^63-1 bytes
// (e.g. batch-bytes 8Ei with 8 workers): the reason says which term overflowed.
// REQUIRES: inputs within the ranges above.
Result<ShmPlan> PlanShm(const ShmInputs& in, const SizingConstants& k);

// The shm-plan finding of `plan` (checks.h): its terms as numbers (required_bytes, procs,
// workers, prefetch_factor, in_flight_extra, batch_bytes, dataloader_bytes, nccl_bytes, base_bytes,
// safety_ppm, floor_applied) and where the processes came from (procs_source); `volume` names the
// volume ("dshm", "/dev/shm" for a Compose service); `pointer` is where the sizing is written.
// REQUIRES: `plan` came from PlanShm with the same constants `k`.
Finding ShmPlanFinding(const ShmPlan& plan, const SizingConstants& k, std::string_view volume,
                       const std::string& procs_source, std::string pointer = {});

}  // namespace shmguard
