// PlanShm: the sizing formula of docs/sources.md §1 with checked arithmetic.
#include "core/plan/shm_plan.h"

#include <limits>

#include "core/values/human_units.h"
#include "core/values/int128.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Multiplies/adds a running product, remembering the first overflow and which term it was in.
class Checked {
 public:
  int64_t Mul(int64_t a, int64_t b, const char* term) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) Overflow(term);
    return r;
  }
  int64_t Add(int64_t a, int64_t b, const char* term) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) Overflow(term);
    return r;
  }
  bool failed() const { return !term_.empty(); }
  const std::string& term() const { return term_; }

 private:
  void Overflow(const char* term) {
    if (term_.empty()) term_ = term;
  }
  std::string term_;
};

// sum × safety, rounded up to a whole MiB, in 128 bits: the caller checks it fits 63.
Int128 WithSafety(int64_t sum, int64_t safety_ppm) {
  Int128 scaled = (static_cast<Int128>(sum) * safety_ppm + 999'999) / 1'000'000;
  return (scaled + kMiB - 1) / kMiB * kMiB;
}

// NCCL's shm transport: one peer per process with 2 processes, else 2 (ring neighbours).
int64_t NcclPeersPerProc(int64_t procs) { return procs == 2 ? 1 : 2; }

}  // namespace

Finding ShmPlanFinding(const ShmPlan& p, const SizingConstants& k, std::string_view volume,
                       const std::string& procs_source, std::string pointer) {
  const ShmInputs& in = p.inputs;
  Finding out(Check::kShmPlan, std::move(pointer));
  out.Num("required_bytes", p.required_bytes)
      .Num("procs", in.procs)
      .Num("workers", in.workers)
      .Num("prefetch_factor", in.prefetch_factor)
      .Num("in_flight_extra", k.in_flight_extra)
      .Num("batch_bytes", in.batch_bytes)
      .Num("dataloader_bytes", p.dataloader_bytes)
      .Num("nccl_bytes", p.nccl_shm_bytes + p.nccl_proxy_bytes)
      .Num("server_bytes", p.server_bytes)
      .Num("base_bytes", p.base_bytes)
      .Num("safety_ppm", k.safety_ppm)
      .Num("floor_applied", p.floor_applied ? 1 : 0)
      .Val("volume", std::string(volume))
      .Val("procs_source", procs_source);
  return out;
}

Result<ShmPlan> PlanShm(const ShmInputs& in, const SizingConstants& k) {
  ShmPlan p;
  p.inputs = in;
  Checked c;
  const int64_t n = in.procs;
  if (in.workers > 0) {
    int64_t batches = c.Add(c.Mul(in.workers, in.prefetch_factor, "DataLoader"), k.in_flight_extra, "DataLoader");
    p.dataloader_bytes = c.Mul(c.Mul(n, batches, "DataLoader"), in.batch_bytes, "DataLoader");
  }
  if (n >= 2 && in.nccl_shm) {
    p.nccl_shm_bytes = c.Mul(c.Mul(n, 2 * NcclPeersPerProc(n), "NCCL shm"), k.nccl_connection_bytes, "NCCL shm");
  }
  if (in.nodes > 1) p.nccl_proxy_bytes = c.Mul(n, k.nccl_proxy_pool_bytes, "NCCL proxy");
  p.base_bytes = k.base_bytes;
  p.server_bytes = in.server_bytes;
  const int64_t sum =
      c.Add(c.Add(c.Add(c.Add(p.dataloader_bytes, p.nccl_shm_bytes, "total"), p.nccl_proxy_bytes, "total"),
                  p.server_bytes, "total"),
            p.base_bytes, "total");
  if (c.failed()) {
    return MakeError(Code::kInvalidInput, "the " + c.term() +
                                              " term exceeds 2^63-1 bytes: the batch bytes or the number of"
                                              " workers or processes are far too large");
  }
  Int128 rounded = WithSafety(sum, k.safety_ppm);
  if (rounded > std::numeric_limits<int64_t>::max()) {
    return MakeError(Code::kInvalidInput,
                     "the size after the ×" + FormatPpm(k.safety_ppm) + " safety factor exceeds 2^63-1 bytes");
  }
  p.safe_bytes = static_cast<int64_t>(rounded);
  p.required_bytes = p.safe_bytes;
  if (n >= 2 && p.required_bytes < k.multi_gpu_floor_bytes) {
    p.required_bytes = k.multi_gpu_floor_bytes;
    p.floor_applied = true;
  }
  return p;
}

}  // namespace shmguard
