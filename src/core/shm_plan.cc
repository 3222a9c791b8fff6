// PlanShm: the sizing formula of docs/sources.md §1 with checked arithmetic.
#include "shmguard/shm_plan.h"

#include <limits>

#include "shmguard/int128.h"
#include "shmguard/quantity.h"

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

std::string Plural(int64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

std::string HumanBytes(int64_t bytes) {
  if (bytes % kMiB == 0 || bytes < kMiB) return FormatBytes(bytes);
  // Tenths of a MiB, rounded half to even as printf("%.1f") rounds an exact binary fraction.
  Int128 scaled = static_cast<Int128>(bytes) * 10;
  auto tenths = static_cast<int64_t>(scaled / kMiB);
  int64_t twice_rest = static_cast<int64_t>(scaled % kMiB) * 2;
  if (twice_rest > kMiB || (twice_rest == kMiB && tenths % 2 == 1)) ++tenths;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "Mi";
}

std::string FormatPpm(int64_t ppm) {
  std::string s = std::to_string(ppm / 1'000'000);
  int64_t frac = ppm % 1'000'000;
  if (frac == 0) return s;
  s += '.';
  for (int64_t unit = 100'000; frac > 0; unit /= 10) {  // six digits at most, trailing zeros dropped
    s += static_cast<char>('0' + frac / unit);
    frac %= unit;
  }
  return s;
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
  const int64_t sum = c.Add(c.Add(c.Add(p.dataloader_bytes, p.nccl_shm_bytes, "total"), p.nccl_proxy_bytes, "total"),
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
  p.required_bytes = static_cast<int64_t>(rounded);
  if (n >= 2 && p.required_bytes < k.multi_gpu_floor_bytes) {
    p.required_bytes = k.multi_gpu_floor_bytes;
    p.floor_applied = true;
  }
  return p;
}

std::string PlanSummary(const ShmPlan& p, const SizingConstants& k, std::string_view what) {
  const ShmInputs& in = p.inputs;
  const int64_t n = in.procs;
  std::string terms;
  auto term = [&](int64_t bytes, const std::string& text) {
    if (bytes == 0) return;
    terms += (terms.empty() ? "" : " + ") + text;
  };
  if (in.workers > 0) {
    term(p.dataloader_bytes, Plural(n, "proc") + " × (" + Plural(in.workers, "worker") + " × " +
                                 std::to_string(in.prefetch_factor) + " + " + std::to_string(k.in_flight_extra) +
                                 ") × " + HumanBytes(in.batch_bytes));
  }
  term(p.nccl_shm_bytes + p.nccl_proxy_bytes, HumanBytes(p.nccl_shm_bytes + p.nccl_proxy_bytes) + " NCCL");
  term(p.base_bytes, HumanBytes(p.base_bytes) + " base");
  return std::string(what) + " needs " + FormatBytes(p.required_bytes) + " = (" + terms + ") × " +
         FormatPpm(k.safety_ppm) +
         (p.floor_applied ? ", raised to the " + FormatBytes(p.required_bytes) + " floor for multi-GPU pods"
                          : std::string());
}

std::vector<std::string> ExplainPlan(const ShmPlan& p, const SizingConstants& k) {
  const ShmInputs& in = p.inputs;
  const int64_t n = in.procs;
  std::vector<std::string> lines;
  if (in.workers > 0) {
    lines.push_back("DataLoader: " + Plural(n, "proc") + " × (" + Plural(in.workers, "worker") + " × " +
                    std::to_string(in.prefetch_factor) + " prefetch + " + std::to_string(k.in_flight_extra) + ") × " +
                    HumanBytes(in.batch_bytes) + " = " + HumanBytes(p.dataloader_bytes));
  } else {
    lines.push_back("DataLoader: 0 workers, batches stay in the training process = 0");
  }
  if (n >= 2 && !in.nccl_shm) {
    lines.push_back("NCCL shm transport: off (NCCL_SHM_DISABLE=1) = 0");
  } else if (n >= 2) {
    int64_t peers = NcclPeersPerProc(n);
    lines.push_back("NCCL shm transport: " + Plural(n, "proc") + " × 2 channels × " + std::to_string(peers) + " peer" +
                    (peers == 1 ? "" : "s") + " × " + std::to_string(k.nccl_connection_bytes) +
                    " B = " + HumanBytes(p.nccl_shm_bytes));
  }
  if (in.nodes > 1) {
    lines.push_back("NCCL proxy pool (multi-node, " + Plural(in.nodes, "pod") + "): " + Plural(n, "proc") + " × " +
                    std::to_string(k.nccl_proxy_pool_bytes) + " B = " + HumanBytes(p.nccl_proxy_bytes));
  }
  lines.push_back("base: " + HumanBytes(p.base_bytes));
  // PlanShm checked that this sum fits.
  const int64_t sum = p.dataloader_bytes + p.nccl_shm_bytes + p.nccl_proxy_bytes + p.base_bytes;
  lines.push_back("sum " + HumanBytes(sum) + " × " + FormatPpm(k.safety_ppm) +
                  " safety, rounded up to MiB = " + FormatBytes(static_cast<int64_t>(WithSafety(sum, k.safety_ppm))));
  if (p.floor_applied) {
    lines.push_back("floor for " + Plural(n, "proc") +
                    " per pod (NVIDIA's 1g advice): " + FormatBytes(p.required_bytes));
  }
  return lines;
}

}  // namespace shmguard
