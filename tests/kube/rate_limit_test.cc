// Backoff, RateLimiter and ParseRetryAfter: the bounds of a wait, the rate, and what a server may
// ask for.
#include "kube/rate_limit.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

namespace shmguard::kube {
namespace {

using std::chrono::milliseconds;

TEST_CASE("Backoff doubles to its maximum, each wait jittered within [d/2, d], and resets", "[rate_limit]") {
  Backoff b(milliseconds(100), milliseconds(1000));
  const long bounds[] = {100, 200, 400, 800, 1000, 1000};
  for (long d : bounds) {
    CAPTURE(d);
    auto w = b.Next().count();
    CHECK(w >= d / 2);
    CHECK(w <= d);
  }
  b.Reset();
  CHECK(b.Next().count() <= 100);
}

TEST_CASE("RateLimiter lets a burst through and then holds to its rate", "[rate_limit]") {
  const RateLimiter::TimePoint t0{};
  RateLimiter limiter(200, 3, t0);  // 5 ms a token once the burst is spent
  using ms = std::chrono::duration<double, std::milli>;
  struct Case {
    double at_ms, wait_ms;
  };
  const Case cases[] = {
      {0, 0},  {0, 0},  {0, 0},  // the burst
      {0, 5},  {0, 10},          // owed: each waits for its own token
      {20, 0}, {20, 0},          // 20 ms refill 4 tokens: the debt of 2 is paid, 2 are left
      {20, 5},                   // ... and no third
  };
  for (const auto& c : cases) {
    CAPTURE(c.at_ms, c.wait_ms);
    auto now = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(ms(c.at_ms));
    CHECK(ms(limiter.Reserve(now)).count() == Approx(c.wait_ms).margin(1e-6));
  }
}

TEST_CASE("ParseRetryAfter reads delay-seconds, capped at 10 minutes, and nothing else", "[rate_limit]") {
  CHECK(ParseRetryAfter("1") == std::chrono::seconds(1));
  CHECK(ParseRetryAfter(" 30 ") == std::chrono::seconds(30));
  CHECK(ParseRetryAfter("86400") == std::chrono::seconds(600));
  for (const char* bad : {"", "-1", "1.5", "Wed, 21 Oct 2026 07:28:00 GMT", "9999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseRetryAfter(bad).has_value());
  }
}

}  // namespace
}  // namespace shmguard::kube
