// ReviewBudget: the CPU time one review may take on the thread that answers it (WorkBudget, asked
// by the core between pod templates and containers), so that a review built to be slow is
// answered — review-over-budget — instead of holding an event loop and every review behind it.
#pragma once

#include <time.h>

#include <chrono>

#include "core/values/work_budget.h"

namespace shmguard::server {

class ReviewBudget : public WorkBudget {
 public:
  // Starts now, on the calling thread; `cpu` of its CPU time may be spent. REQUIRES: Exhausted
  // is asked on the same thread.
  explicit ReviewBudget(std::chrono::milliseconds cpu) : limit_ns_(Now() + cpu.count() * 1'000'000) {}
  bool Exhausted() const override { return cpu_allowed_ && Now() > limit_ns_; }
  // A budget of 0 is none.
  static ReviewBudget None() {
    ReviewBudget b(std::chrono::milliseconds(0));
    b.cpu_allowed_ = false;
    return b;
  }

 private:
  static long long Now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
  }
  long long limit_ns_;
  bool cpu_allowed_ = true;
};

}  // namespace shmguard::server
