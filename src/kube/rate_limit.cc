// Backoff, ParseRetryAfter, RateLimiter, SleepUnlessStopped.
#include "kube/rate_limit.h"

#include <algorithm>
#include <thread>

namespace shmguard::kube {

std::chrono::milliseconds Backoff::Next() {
  auto d = next_;
  next_ = std::min(max_, next_ * 2);
  std::uniform_int_distribution<long> pick(d.count() / 2, d.count());
  return std::chrono::milliseconds(pick(rng_));
}

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty() || value.size() > 9) return std::nullopt;
  long seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = seconds * 10 + (c - '0');
  }
  return std::chrono::seconds(std::min(seconds, 600L));
}

RateLimiter::RateLimiter(double qps, int burst, TimePoint start)
    : qps_(qps), tokens_(burst), burst_(burst), last_(start) {}

std::chrono::duration<double> RateLimiter::Reserve(TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + qps_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  tokens_ -= 1;
  return std::chrono::duration<double>(tokens_ >= 0 ? 0 : -tokens_ / qps_);
}

void RateLimiter::Wait(const std::atomic<bool>* cancel) {
  auto wait = Reserve(std::chrono::steady_clock::now());
  if (wait.count() <= 0) return;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait);
  if (cancel) {
    SleepUnlessStopped(*cancel, ms);
  } else {
    std::this_thread::sleep_for(ms);
  }
}

bool SleepUnlessStopped(const std::atomic<bool>& stop, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < until) {
    if (stop) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
  }
  return stop;
}

}  // namespace shmguard::kube
