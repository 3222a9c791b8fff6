// CheckLimit and MemoryLimitDenial: a /dev/shm size against the memory limit, exactly at the
// boundaries (docs/sources.md §4).
#include "shmguard/memory_limit.h"

#include <catch2/catch.hpp>

namespace shmguard {
namespace {

constexpr int64_t kGi = 1ll << 30;

PodFacts WithLimit(std::optional<int64_t> limit, const char* source = "sum of container limits") {
  PodFacts f;
  f.memory_limit_bytes = limit;
  f.memory_limit_source = source;
  return f;
}

TEST_CASE("CheckLimit denies a size over the limit or over the policy's fraction of it", "[memory_limit]") {
  struct Case {
    const char* name;
    int64_t required;
    const char* denial;  // a substring, or "" when it fits
  };
  const Case cases[] = {
      {"well under", 16 * kGi, ""},
      {"exactly half (maxFractionOfMemoryLimit 0.5)", 32 * kGi, ""},
      {"a byte over half", 32 * kGi + 1, "dshm needs 34359738369 is more than 0.5 of the memory limit 64Gi"},
      {"the whole limit", 64 * kGi, "is more than 0.5 of the memory limit 64Gi, leaving 0 for the processes"},
      {"over the limit", 65 * kGi,
       "memory limit 64Gi (sum of container limits) is below the 65Gi dshm needs: raise the limit or lower "
       "num-workers/prefetch-factor/batch size"},
  };
  const PodFacts facts = WithLimit(64 * kGi);
  for (const auto& c : cases) {
    CAPTURE(c.name);
    LimitCheck check = CheckLimit(c.required, facts, Policy{}, "dshm");
    if (*c.denial) {
      CHECK_THAT(check.denial, Catch::Contains(c.denial));
      CHECK(check.left.empty());
    } else {
      CHECK(check.denial.empty());
      CHECK_THAT(check.left, Catch::StartsWith("memory limit 64Gi leaves "));
    }
    CHECK(check.warning.empty());
  }
}

TEST_CASE("CheckLimit says what the limit leaves, or warns when there is none", "[memory_limit]") {
  LimitCheck fits = CheckLimit(16 * kGi, WithLimit(64 * kGi), Policy{}, "dshm");
  CHECK(fits.left == "memory limit 64Gi leaves 48Gi for the processes (dshm pages count against the limit)");
  const PodFacts unlimited = WithLimit(std::nullopt, "container \"t\" has no memory limit");
  LimitCheck pod = CheckLimit(16 * kGi, unlimited, Policy{}, "dshm");
  CHECK(pod.denial.empty());
  CHECK(pod.left.empty());
  CHECK(pod.warning ==
        "no memory limit (container \"t\" has no memory limit): dshm pages are bounded only by sizeLimit and node "
        "memory");
  LimitCheck service = CheckLimit(16 * kGi, unlimited, Policy{}, "/dev/shm", true);
  CHECK_THAT(service.warning, Catch::EndsWith("/dev/shm pages are bounded only by shm_size and host memory"));
}

TEST_CASE("MemoryLimitDenial takes the policy's fraction and the caller's words", "[memory_limit]") {
  Policy policy;
  policy.max_fraction_ppm = 250'000;  // a quarter
  const PodFacts facts = WithLimit(8 * kGi, "pod-level limit");
  CHECK(MemoryLimitDenial(2 * kGi, "floor of a GPU pod", facts, policy, "raise the memory limit").empty());
  CHECK(MemoryLimitDenial(3 * kGi, "floor of a GPU pod", facts, policy, "raise the memory limit") ==
        "floor of a GPU pod 3Gi is more than 0.25 of the memory limit 8Gi, leaving 5Gi for the processes: raise the "
        "memory limit");
  CHECK(MemoryLimitDenial(9 * kGi, "floor of a GPU pod", facts, policy, "raise the memory limit") ==
        "memory limit 8Gi (pod-level limit) is below the 9Gi floor of a GPU pod: raise the memory limit");
  CHECK(MemoryLimitDenial(1ll << 62, "x", WithLimit(std::nullopt), policy, "y").empty());  // no limit: nothing to deny
}

}  // namespace
}  // namespace shmguard
