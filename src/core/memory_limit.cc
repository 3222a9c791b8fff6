// MemoryLimitDenial and CheckLimit: a size against the memory limit, in exact integers.
#include "shmguard/memory_limit.h"

#include "shmguard/int128.h"
#include "shmguard/quantity.h"

namespace shmguard {
namespace {

// max_fraction × limit < required, in exact integers.
bool ExceedsFraction(int64_t required, int64_t limit, int64_t ppm) {
  return static_cast<Int128>(required) * 1'000'000 > static_cast<Int128>(limit) * ppm;
}

}  // namespace

std::string MemoryLimitDenial(int64_t required, const std::string& what, const PodFacts& facts, const Policy& policy,
                              const std::string& remedy) {
  if (!facts.memory_limit_bytes) return {};
  const int64_t limit = *facts.memory_limit_bytes;
  const std::string lim = FormatBytes(limit);
  if (required > limit) {
    return "memory limit " + lim + " (" + facts.memory_limit_source + ") is below the " + FormatBytes(required) + " " +
           what + ": " + remedy;
  }
  if (ExceedsFraction(required, limit, policy.max_fraction_ppm)) {
    return what + " " + FormatBytes(required) + " is more than " + FormatPpm(policy.max_fraction_ppm) +
           " of the memory limit " + lim + ", leaving " + HumanBytes(limit - required) +
           " for the processes: " + remedy;
  }
  return {};
}

LimitCheck CheckLimit(int64_t required, const PodFacts& facts, const Policy& policy, std::string_view what,
                      bool compose) {
  LimitCheck c;
  const std::string name(what);
  c.denial = MemoryLimitDenial(required, name + " needs", facts, policy,
                               "raise the limit or lower num-workers/prefetch-factor/batch size");
  if (!c.denial.empty()) return c;
  if (!facts.memory_limit_bytes) {
    c.warning = "no memory limit (" + facts.memory_limit_source + "): " + name +
                (compose ? " pages are bounded only by shm_size and host memory"
                         : " pages are bounded only by sizeLimit and node memory");
  } else {
    c.left = "memory limit " + FormatBytes(*facts.memory_limit_bytes) + " leaves " +
             HumanBytes(*facts.memory_limit_bytes - required) + " for the processes (" + name +
             " pages count against the limit)";
  }
  return c;
}

}  // namespace shmguard
