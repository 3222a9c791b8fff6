// What keeps a client from hammering the API server, as client-go keeps it: a token bucket over
// every request (flowcontrol.NewTokenBucketRateLimiter; client-go's default 5 QPS, burst 10), and
// jittered exponential backoff after a failure (wait.Backoff), which a Retry-After from the
// server lengthens.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>

namespace shmguard::kube {

// Jittered exponential backoff: Next() doubles from `initial` up to `max`, each wait drawn
// uniformly from [d/2, d] so that many clients do not retry together; Reset() after a success.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max), next_(initial) {}
  std::chrono::milliseconds Next();
  void Reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_, max_, next_;
  std::mt19937 rng_{std::random_device{}()};
};

// A Retry-After header's delay (RFC 9110 §10.2.3, delay-seconds only: what the API server sends
// with 429 and 503), capped at 10 minutes; nullopt when it is absent or not a number of seconds.
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value);

// A token bucket: `burst` tokens at first, refilled at `qps` a second. Wait() returns at once
// while a token remains, else sleeps until one is there, or until `cancel` is set.
class RateLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  RateLimiter(double qps, int burst, TimePoint start = std::chrono::steady_clock::now());
  void Wait(const std::atomic<bool>* cancel = nullptr);
  // Takes a token at `now`: how long the caller must wait before using it (0 while tokens
  // remain). Tokens taken ahead are owed, so callers queue in order.
  std::chrono::duration<double> Reserve(TimePoint now);

 private:
  std::mutex mu_;
  double qps_, tokens_, burst_;
  TimePoint last_;
};

// Sleeps `wait`, in steps short enough to end within 50 ms of `stop` being set; true when it was.
bool SleepUnlessStopped(const std::atomic<bool>& stop, std::chrono::milliseconds wait);

}  // namespace shmguard::kube
