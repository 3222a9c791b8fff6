// What every server's plan shares: terms summed without wrapping, the segments' flag bytes and
// page rounding, Ray's object store, the ranks a pod holds, the counts nobody set; and the terms
// in words.
#include <algorithm>

#include "core/plan/shm_plan.h"
#include "core/servers/internal/server_rows.h"
#include "core/values/human_units.h"
#include "core/values/int128.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace servers {
namespace {

constexpr int64_t kPage = 4096;  // tmpfs allocates whole pages
constexpr int64_t kMiB = int64_t{1} << 20;
// Ray's default object store: 30 % of the memory it sees, at most 200e9 bytes
// (python/ray/_private/ray_constants.py DEFAULT_OBJECT_STORE_MEMORY_PROPORTION and
// DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES); its advice for /dev/shm is 1.1 × the store
// (python/ray/_private/services.py determine_plasma_store_config).
constexpr int64_t kRayStoreMaxBytes = 200'000'000'000;

int64_t PageUp(int64_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

void PlanBuilder::Add(ServerSegment segment, int64_t count, int64_t each, int64_t meta) {
  if (count <= 0) return;
  plan.terms.push_back({segment, count, each});
  // Each segment is payload then flags, one ftruncate'd file; tmpfs holds it in whole pages.
  const Int128 extra = static_cast<Int128>(count) * (PageUp(each + meta) - each);
  flag_bytes = static_cast<int64_t>(std::min<Int128>(static_cast<Int128>(flag_bytes) + extra, INT64_MAX));
  segments += count;
}

Result<ServerPlan> PlanBuilder::Finish() {
  if (flag_bytes > 0) plan.terms.push_back({ServerSegment::kSegmentFlags, 1, flag_bytes, segments});
  plan.bytes = 0;
  for (const auto& t : plan.terms) {
    int64_t bytes = 0, sum = 0;
    if (__builtin_mul_overflow(t.count, t.each, &bytes) || __builtin_add_overflow(plan.bytes, bytes, &sum)) {
      return MakeError(Code::kInvalidInput, "its /dev/shm segments sum past 2^63-1 bytes");
    }
    plan.bytes = sum;
  }
  return std::move(plan);
}

void AddRayStore(const ServerLaunch& l, std::optional<int64_t> memory_limit, PlanBuilder& b) {
  int64_t store = 0, limit = 0;
  if (l.object_store_bytes) {
    store = *l.object_store_bytes;
  } else if (memory_limit) {
    store = std::min(*memory_limit / 10 * 3, kRayStoreMaxBytes);
    limit = *memory_limit;
  } else {
    b.plan.unbounded = "a Ray object store with no memory limit: Ray takes 30% of the node's memory";
    return;
  }
  // Ray's 1.1 ×, rounded up to a whole MiB, in 128 bits: a store near 2^63 bytes must not wrap.
  const Int128 advised = (static_cast<Int128>(store) * 11 + 9) / 10;
  const Int128 rounded = (advised + kMiB - 1) / kMiB * kMiB;
  const int64_t each = rounded > INT64_MAX ? INT64_MAX : static_cast<int64_t>(rounded);
  b.plan.terms.push_back({ServerSegment::kRayObjectStore, 1, each, store, limit});
}

int64_t LocalRanks(int64_t world, int64_t nnodes, int64_t gpus, bool& multi_node) {
  int64_t local = world;
  if (nnodes > 1) {
    local = (world + nnodes - 1) / nnodes;
    multi_node = true;
  }
  if (gpus > 0 && local > gpus) {
    local = gpus;
    multi_node = true;
  }
  return std::max<int64_t>(local, 1);
}

void FillUnread(int64_t gpus, std::initializer_list<int64_t*> counts) {
  int64_t known = 1;
  for (int64_t* c : counts) known = *c > 0 ? std::min<int64_t>(known * *c, kMaxRanks) : known;
  bool first = true;
  for (int64_t* c : counts) {
    if (*c > 0) continue;
    *c = first && gpus > known ? std::max<int64_t>(1, gpus / known) : 1;
    first = false;
  }
}

bool GivenOnCommandLine(const ServerLaunch& l, std::initializer_list<std::string_view> names) {
  for (const std::string& read : l.read) {
    const std::string_view name = std::string_view(read).substr(0, read.find('='));
    for (std::string_view n : names) {
      if (name == n) return true;
    }
  }
  return false;
}

}  // namespace servers

std::string ServerTermsText(const ServerPlan& plan) {
  std::string out;
  for (const auto& t : plan.terms) {
    std::string what;
    switch (t.segment) {
      case ServerSegment::kExecutorBroadcastQueue: what = "executor broadcast queue"; break;
      case ServerSegment::kWorkerResponseQueue: what = "worker response queue"; break;
      case ServerSegment::kWorkerReplyBroadcaster: what = "worker reply queue"; break;
      case ServerSegment::kInnerDpBroadcaster: what = "inner data-parallel broadcaster"; break;
      case ServerSegment::kTensorArena: what = "shm tensor arena"; break;
      case ServerSegment::kTpBroadcaster: what = "tensor-parallel broadcaster"; break;
      case ServerSegment::kDcpBroadcaster: what = "decode context-parallel broadcaster"; break;
      case ServerSegment::kAttentionTpBroadcaster: what = "attention tensor-parallel broadcaster"; break;
      case ServerSegment::kAttentionCpBroadcaster: what = "attention context-parallel broadcaster"; break;
      case ServerSegment::kPdmuxTpBroadcaster: what = "PD-multiplexing tensor-parallel broadcaster"; break;
      case ServerSegment::kMultimodalCache: what = "multimodal processor cache"; break;
      case ServerSegment::kKvOffload: what = "CPU KV-cache offload region"; break;
      case ServerSegment::kRayObjectStore:
        what = t.memory_limit ? "Ray object store (Ray's default: 30% of the " + FormatBytes(t.memory_limit) +
                                    " memory limit) × 1.1"
                              : "Ray object store (--object-store-memory " + HumanBytes(t.basis) + ") × 1.1";
        break;
      case ServerSegment::kEncoderCache: what = "encoder-cache region (ECCPUConnector)"; break;
      case ServerSegment::kPythonBackendRegion: what = "Python backend region (shm-default-byte-size)"; break;
      case ServerSegment::kSegmentFlags:
        what = "of flags and page rounding over " + std::to_string(t.basis) + " segments";
        break;
    }
    if (!out.empty()) out += " + ";
    out += t.count == 1 ? HumanBytes(t.each) + " " + what
                        : std::to_string(t.count) + " × " + HumanBytes(t.each) + " " + what + "s";
  }
  return out;
}

}  // namespace shmguard
