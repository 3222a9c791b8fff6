// CheckLimit and MemoryLimitDenial: a /dev/shm size against the memory limit, exactly at the
// boundaries (docs/sources.md §4), as findings with their numbers.
#include "core/sizing/memory_limit.h"

#include <catch2/catch.hpp>

namespace shmguard {
namespace {

constexpr int64_t kGi = 1ll << 30;

PodFacts WithLimit(std::optional<int64_t> limit, const char* source = "sum of container limits") {
  PodFacts f;
  f.memory_limit_bytes = limit;
  f.memory_limit_source = source;
  f.memory_limit_pointer = "/spec/containers/0/resources/limits/memory";
  return f;
}

TEST_CASE("CheckLimit denies a size over the limit or over the policy's fraction of it", "[memory_limit]") {
  struct Case {
    const char* name;
    int64_t required;
    bool denied;
    bool over_fraction;  // denied for the fraction, not the limit itself
  };
  const Case cases[] = {
      {"well under", 16 * kGi, false, false},
      {"exactly half (maxFractionOfMemoryLimit 0.5)", 32 * kGi, false, false},
      {"a byte over half", 32 * kGi + 1, true, true},
      {"the whole limit", 64 * kGi, true, true},
      {"over the limit", 65 * kGi, true, false},
  };
  const PodFacts facts = WithLimit(64 * kGi);
  for (const auto& c : cases) {
    SECTION(c.name) {
      LimitCheck check = CheckLimit(c.required, facts, Policy{}, ShmUse{});
      CHECK_FALSE(check.missing);
      if (c.denied) {
        REQUIRE(check.denial);
        CHECK_FALSE(check.headroom);
        CHECK(check.denial->check == Check::kShmOverMemoryLimit);
        CHECK(check.denial->severity == Severity::kError);
        CHECK(check.denial->pointer == "/spec/containers/0/resources/limits/memory");
        CHECK(check.denial->Number("required_bytes") == c.required);
        CHECK(check.denial->Number("memory_limit_bytes") == 64 * kGi);
        CHECK(check.denial->HasNumber("max_fraction_ppm") == c.over_fraction);
        if (c.over_fraction) CHECK(check.denial->Number("max_fraction_ppm") == 500'000);
        if (c.over_fraction) CHECK(check.denial->Number("left_bytes") == 64 * kGi - c.required);
        CHECK(check.denial->Value("limit_source") == "sum of container limits");
        CHECK(check.denial->Value("volume") == "dshm");
      } else {
        CHECK_FALSE(check.denial);
        REQUIRE(check.headroom);
        CHECK(check.headroom->check == Check::kMemoryHeadroom);
        CHECK(check.headroom->Number("left_bytes") == 64 * kGi - c.required);
        CHECK(check.headroom->Number("memory_limit_bytes") == 64 * kGi);
      }
    }
  }
}

TEST_CASE("CheckLimit says what the limit leaves, or warns when there is none", "[memory_limit]") {
  LimitCheck fits = CheckLimit(16 * kGi, WithLimit(64 * kGi), Policy{}, ShmUse{});
  REQUIRE(fits.headroom);
  CHECK(fits.headroom->Number("left_bytes") == 48 * kGi);
  CHECK(fits.headroom->Value("volume") == "dshm");
  const PodFacts unlimited = WithLimit(std::nullopt, "container \"t\" has no memory limit");
  LimitCheck pod = CheckLimit(16 * kGi, unlimited, Policy{}, ShmUse{});
  CHECK_FALSE(pod.denial);
  CHECK_FALSE(pod.headroom);
  REQUIRE(pod.missing);
  CHECK(pod.missing->check == Check::kMemoryLimitMissing);
  CHECK(pod.missing->severity == Severity::kWarning);
  CHECK(pod.missing->Value("limit_source") == "container \"t\" has no memory limit");
  CHECK(pod.missing->Number("compose") == 0);
  LimitCheck service = CheckLimit(16 * kGi, unlimited, Policy{}, ShmUse{"/dev/shm", false, true});
  REQUIRE(service.missing);
  CHECK(service.missing->Number("compose") == 1);
  CHECK(service.missing->Value("volume") == "/dev/shm");
}

TEST_CASE("CheckLimit says when the size is an unannotated pod's floor", "[memory_limit]") {
  const ShmUse floor{"dshm", true, false};
  LimitCheck fits = CheckLimit(kGi, WithLimit(64 * kGi), Policy{}, floor);
  REQUIRE(fits.headroom);
  CHECK(fits.headroom->Number("floor") == 1);
  LimitCheck unlimited = CheckLimit(kGi, WithLimit(std::nullopt), Policy{}, floor);
  REQUIRE(unlimited.missing);
  CHECK(unlimited.missing->Number("floor") == 1);
}

TEST_CASE("MemoryLimitDenial takes the policy's fraction, and says when the size is a floor", "[memory_limit]") {
  Policy policy;
  policy.max_fraction_ppm = 250'000;  // a quarter
  const PodFacts facts = WithLimit(8 * kGi, "pod-level limit");
  const ShmUse floor{"dshm", true, false};
  CHECK_FALSE(MemoryLimitDenial(2 * kGi, facts, policy, floor));
  auto quarter = MemoryLimitDenial(3 * kGi, facts, policy, floor);
  REQUIRE(quarter);
  CHECK(quarter->Number("max_fraction_ppm") == 250'000);
  CHECK(quarter->Number("left_bytes") == 5 * kGi);
  CHECK(quarter->Number("floor") == 1);
  auto over = MemoryLimitDenial(9 * kGi, facts, policy, ShmUse{});
  REQUIRE(over);
  CHECK(over->Number("required_bytes") == 9 * kGi);
  CHECK(over->Number("memory_limit_bytes") == 8 * kGi);
  CHECK_FALSE(over->HasNumber("max_fraction_ppm"));
  CHECK(over->Number("floor") == 0);
  CHECK(over->Value("limit_source") == "pod-level limit");
  CHECK_FALSE(MemoryLimitDenial(1ll << 62, WithLimit(std::nullopt), policy, ShmUse{}));  // no limit: nothing to deny
}

}  // namespace
}  // namespace shmguard
