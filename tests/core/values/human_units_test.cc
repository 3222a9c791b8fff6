// Numbers for people: a byte count exact when it can be, a factor in millionths, a count with
// its noun.
#include "core/values/human_units.h"

#include <catch2/catch.hpp>

namespace shmguard {
namespace {

TEST_CASE("HumanBytes is exact for whole units and below 1Mi, else MiB with one decimal", "[human_units]") {
  const std::pair<int64_t, const char*> cases[] = {
      {0, "0"},
      {999, "999"},
      {1000, "1k"},  // a quantity's canonical form
      {1024, "1Ki"},
      {int64_t{1} << 20, "1Mi"},
      {int64_t{12} << 30, "12Gi"},
      {int64_t{1536} << 20, "1536Mi"},
      {154'256'332, "147.1Mi"},
      {int64_t{3} << 40, "3Ti"},
  };
  for (const auto& [bytes, text] : cases) {
    CAPTURE(bytes);
    CHECK(HumanBytes(bytes) == text);
  }
}

TEST_CASE("FormatPpm writes millionths as a short decimal, and Plural picks the noun", "[human_units]") {
  CHECK(FormatPpm(1'200'000) == "1.2");
  CHECK(FormatPpm(500'000) == "0.5");
  CHECK(FormatPpm(1'000'000) == "1");
  CHECK(FormatPpm(1'500'000) == "1.5");
  CHECK(FormatPpm(250'000) == "0.25");
  CHECK(Plural(1, "proc") == "1 proc");
  CHECK(Plural(4, "proc") == "4 procs");
  CHECK(Plural(0, "GPU") == "0 GPUs");
  CHECK(Plural(2, "process", "processes") == "2 processes");
  CHECK(Plural(1, "process", "processes") == "1 process");
}

}  // namespace
}  // namespace shmguard
