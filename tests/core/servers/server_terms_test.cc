// What every server's plan shares: segments rounded to whole pages with their flags, sums that
// never wrap, the ranks a pod holds, the counts a launch names through an unset variable, Ray's
// store, and the terms in words.
#include <catch2/catch.hpp>

#include "core/servers/internal/server_rows.h"
#include "servers_test_util.h"

namespace shmguard {
namespace {

using servers::FillUnread;
using servers::LocalRanks;
using servers::PlanBuilder;
using test::kMiB;

TEST_CASE("PlanBuilder adds each segment's flags and page rounding as one term, and refuses a wrapped sum",
          "[server_terms]") {
  PlanBuilder b;
  b.Add(ServerSegment::kExecutorBroadcastQueue, 1, 16 * kMiB, 10);  // 16 MiB + 10 flag bytes: one more page
  b.Add(ServerSegment::kWorkerResponseQueue, 4, 24 * kMiB, 4096);   // a whole page of flags each
  b.Add(ServerSegment::kTpBroadcaster, 0, 24 * kMiB);               // none: no term
  auto plan = b.Finish();
  REQUIRE(plan);
  REQUIRE(plan->terms.size() == 3);
  CHECK(plan->terms[2].segment == ServerSegment::kSegmentFlags);
  CHECK(plan->terms[2].each == 4096 + 4 * 4096);
  CHECK(plan->terms[2].basis == 5);  // segments
  CHECK(plan->bytes == 16 * kMiB + 4 * 24 * kMiB + 5 * 4096);
  CHECK(ServerTermsText(*plan) ==
        "16Mi executor broadcast queue + 4 × 24Mi worker response queues + 20Ki of flags and page rounding over 5 "
        "segments");

  PlanBuilder huge;
  huge.Add(ServerSegment::kTpBroadcaster, int64_t{1} << 40, int64_t{1} << 30);
  auto wrapped = huge.Finish();
  REQUIRE_FALSE(wrapped);
  CHECK(wrapped.error().message == "its /dev/shm segments sum past 2^63-1 bytes");
}

TEST_CASE("LocalRanks keeps the ranks a pod holds, and FillUnread gives an unset count the GPUs left",
          "[server_terms]") {
  bool multi = false;
  CHECK(LocalRanks(8, 1, 8, multi) == 8);
  CHECK_FALSE(multi);
  CHECK(LocalRanks(16, 2, 8, multi) == 8);  // --nnodes 2: half here
  CHECK(multi);
  multi = false;
  CHECK(LocalRanks(16, 1, 8, multi) == 8);  // more ranks than GPUs: the rest in other pods
  CHECK(multi);
  multi = false;
  CHECK(LocalRanks(0, 1, 0, multi) == 1);
  CHECK_FALSE(multi);

  int64_t tp = 0, pp = 2;
  FillUnread(8, {&tp, &pp});
  CHECK(tp == 4);  // the GPUs left once PP 2 is taken
  CHECK(pp == 2);
  int64_t a = 0, b = 0;
  FillUnread(8, {&a, &b});
  CHECK(a == 8);
  CHECK(b == 1);
  int64_t none = 0;
  FillUnread(0, {&none});
  CHECK(none == 1);
}

TEST_CASE("Ray's store in words names where its size came from", "[server_terms]") {
  const ServerPlan given = test::PlanOf("{name: r, command: [ray, start, --object-store-memory, '1073741824']}", 0);
  CHECK(ServerTermsText(given) == "1127Mi Ray object store (--object-store-memory 1Gi) × 1.1");
  const ServerPlan share = test::PlanOf("{name: r, command: [ray, start]}", 0, int64_t{10} << 30);
  CHECK_THAT(ServerTermsText(share),
             Catch::EndsWith("Ray object store (Ray's default: 30% of the 10Gi memory limit) × 1.1"));
}

}  // namespace
}  // namespace shmguard
