// MemoryLimitDenial and CheckLimit: a size against the memory limit, in exact integers.
#include "core/sizing/memory_limit.h"

#include "core/values/int128.h"

namespace shmguard {
namespace {

// max_fraction × limit < required, in exact integers.
bool ExceedsFraction(int64_t required, int64_t limit, int64_t ppm) {
  return static_cast<Int128>(required) * 1'000'000 > static_cast<Int128>(limit) * ppm;
}

Finding& Describe(Finding& f, const PodFacts& facts, ShmUse use) {
  f.Val("volume", std::string(use.volume)).Val("limit_source", facts.memory_limit_source);
  if (use.floor) f.Num("floor", 1);
  if (use.compose) f.Num("compose", 1);
  return f;
}

}  // namespace

std::optional<Finding> MemoryLimitDenial(int64_t required, const PodFacts& facts, const Policy& policy, ShmUse use) {
  if (!facts.memory_limit_bytes) return std::nullopt;
  const int64_t limit = *facts.memory_limit_bytes;
  Finding f(Check::kShmOverMemoryLimit, facts.memory_limit_pointer);
  f.Num("required_bytes", required).Num("memory_limit_bytes", limit);
  if (use.server) f.Num("server", 1);
  if (required > limit) return Describe(f, facts, use);
  if (ExceedsFraction(required, limit, policy.max_fraction_ppm)) {
    f.Num("max_fraction_ppm", policy.max_fraction_ppm).Num("left_bytes", limit - required);
    return Describe(f, facts, use);
  }
  return std::nullopt;
}

LimitCheck CheckLimit(int64_t required, const PodFacts& facts, const Policy& policy, ShmUse use) {
  LimitCheck c;
  c.denial = MemoryLimitDenial(required, facts, policy, use);
  if (c.denial) return c;
  if (!facts.memory_limit_bytes) {
    Finding f(Check::kMemoryLimitMissing, facts.memory_limit_pointer);
    c.missing = std::move(Describe(f, facts, use));
  } else {
    Finding f(Check::kMemoryHeadroom, facts.memory_limit_pointer);
    f.Num("memory_limit_bytes", *facts.memory_limit_bytes).Num("left_bytes", *facts.memory_limit_bytes - required);
    c.headroom = std::move(Describe(f, facts, use));
  }
  return c;
}

}  // namespace shmguard
