// Ray's row: `ray start` and its object store, which lives in /dev/shm when it fits (docs/
// sources.md §10): --object-store-memory, else 30% of the memory limit, × 1.1; unbounded when
// neither is known.
#include "servers_test_util.h"

namespace shmguard {
namespace {

using test::kGiB;
using test::kMiB;

TEST_CASE("Ray's object store: its flag, else 30% of the memory limit, each × 1.1 to a whole MiB", "[ray]") {
  // 1e10 × 1.1 = 11e9 bytes, rounded up to a MiB.
  const ServerPlan store =
      test::PlanOf("{name: r, command: [ray, start, --head, --object-store-memory=10000000000]}", 0);
  CHECK(store.bytes == (11'000'000'000 + kMiB - 1) / kMiB * kMiB);
  CHECK(store.procs == 1);
  CHECK(test::PlanOf("{name: r, command: [ray, start, --object-store-memory, '10000000000']}", 4).procs == 4);
  // Ray's default: 30% of a 64Gi limit, × 1.1.
  CHECK(test::PlanOf("{name: r, command: [ray, start, --head]}", 0, 64 * kGiB).bytes ==
        ((64 * kGiB / 10 * 3 * 11 + 9) / 10 + kMiB - 1) / kMiB * kMiB);
  const ServerPlan unknown = test::PlanOf("{name: r, command: [ray, start, --head]}", 0);
  CHECK(unknown.bytes == 0);
  CHECK_FALSE(unknown.unbounded.empty());
}

TEST_CASE("A Ray object store near 2^63 bytes is an error or a size, never a wrapped sum", "[ray]") {
  auto huge =
      PlanServer(test::LaunchOf("{name: r, command: [ray, start, --object-store-memory, '9000000000000000000']}"), 0,
                 std::nullopt);
  if (huge) {
    CHECK(huge->bytes > 0);
  } else {
    CHECK_FALSE(huge.error().message.empty());
  }
}

}  // namespace
}  // namespace shmguard
