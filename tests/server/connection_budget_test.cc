// ConnectionsFor: the webhook's connections from its memory limit; CgroupMemoryLimit reads this
// process's.
#include "server/connection_budget.h"

#include <catch2/catch.hpp>

namespace shmguard::server {
namespace {

TEST_CASE("ConnectionsFor fits idle connections and the requests in flight in the memory limit",
          "[connection_budget]") {
  constexpr int64_t kMiB = int64_t{1} << 20;
  const struct {
    const char* name;
    std::optional<int64_t> limit;
    int threads;
    size_t body;
    size_t want;
  } cases[] = {
      {"the chart's 128Mi, 2 loops, 8 MiB bodies", 128 * kMiB, 2, 8 << 20, 2048},
      {"8 loops take more for requests in flight", 256 * kMiB, 8, 8 << 20, 3072},
      {"no limit", std::nullopt, 2, 8 << 20, kMaxConnectionsUnlimited},
      {"a limit below what requests need: the floor", 48 * kMiB, 2, 8 << 20, 64},
      {"a large limit: the ceiling", 4096 * kMiB, 2, 8 << 20, kMaxConnectionsUnlimited},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const size_t n = ConnectionsFor(c.limit, c.threads, c.body);
      CHECK(n == c.want);
      if (c.limit && n > 64 && n < kMaxConnectionsUnlimited) {
        // What they may hold fits: idle connections, requests in flight, the process.
        CHECK(static_cast<int64_t>(n) * kIdleConnectionBytes + int64_t{c.threads} * 2 * static_cast<int64_t>(c.body) +
                  kBaseBytes <=
              *c.limit);
      }
    }
  }
  // This machine's limit, if any, is a positive number of bytes.
  if (auto limit = CgroupMemoryLimit()) CHECK(*limit > 0);
}

}  // namespace
}  // namespace shmguard::server
