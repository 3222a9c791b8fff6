#include "core/values/timestamp.h"

#include <catch2/catch.hpp>

namespace shmguard {
namespace {

TEST_CASE("ParseRfc3339Utc reads Kubernetes' times as seconds since the epoch", "[timestamp]") {
  CHECK(ParseRfc3339Utc("1970-01-01T00:00:00Z") == std::optional<int64_t>(0));
  CHECK(ParseRfc3339Utc("2000-03-01T00:00:00Z") == std::optional<int64_t>(951868800));
  CHECK(ParseRfc3339Utc("2026-11-27T12:34:56.789Z") == std::optional<int64_t>(1795782896));
  for (const char* bad : {"", "2026-11-27", "2026-11-27T12:34:56+01:00", "2026-13-01T00:00:00Z", "20x6-11-27T12:34:56Z",
                          "2026-11-27T12:34:56.Z"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseRfc3339Utc(bad));
  }
}

}  // namespace
}  // namespace shmguard
