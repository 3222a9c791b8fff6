// ApiQueue: the node agent's writes to the API server (Events, ShmProfiles, resizes) on a thread of
// their own, so that a slow or unreachable API server never delays the next sample. Bounded, as
// client-go's EventRecorder is (its broadcaster drops what does not fit its 1,000-event channel
// and says so): a task that does not fit is dropped and counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "agent/collector.h"

namespace shmguard::agent {

class ApiQueue : public Collector {
 public:
  static constexpr size_t kDefaultCapacity = 1000;
  explicit ApiQueue(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  ~ApiQueue() { Stop(); }

  // Runs `task` on the queue's thread, after those posted before it. Before Start, or after
  // Stop, it runs on the caller's thread at once (a test drives the agent one round at a time).
  // False when the queue is full: `task` is dropped and counted.
  bool Post(std::function<void()> task);
  void Start();
  // Joins the thread after the task it is running; what is still queued is dropped and counted.
  void Stop();

  uint64_t dropped() const { return dropped_; }
  uint64_t done() const { return done_; }
  size_t depth() const;
  // The writes waiting, and those dropped.
  void Collect(std::ostream& out) const override;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool running_ = false, stopping_ = false;
  std::atomic<uint64_t> dropped_{0}, done_{0};
  std::thread thread_;
};

}  // namespace shmguard::agent
