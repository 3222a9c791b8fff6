// KubeClient's parts that need no API server: the backoff's bounds, the rate limit, in-cluster
// configuration outside a pod. The client against a real API server is in e2e/.
#include "server/kube_client.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace shmguard::server {
namespace {

using std::chrono::milliseconds;

TEST_CASE("Backoff doubles to its maximum, each wait jittered within [d/2, d], and resets", "[kube_client]") {
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

TEST_CASE("RateLimiter lets a burst through and then holds to its rate", "[kube_client]") {
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

TEST_CASE("KubeConfig::InCluster fails outside a pod, naming what is missing", "[kube_client]") {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  if (host) return;  // running inside a pod: nothing to check here
  auto c = KubeConfig::InCluster();
  REQUIRE_FALSE(c);
  CHECK(c.error().code == Code::kIo);
  CHECK(c.error().message.find("KUBERNETES_SERVICE_HOST") != std::string::npos);
}

}  // namespace
}  // namespace shmguard::server
