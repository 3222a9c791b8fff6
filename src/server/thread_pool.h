// A task queue for cpp-httplib that grows a thread per waiting connection up to a cap, then
// shrinks back. cpp-httplib holds a worker for the whole life of a keep-alive connection, so a
// fixed pool of 8 lets 8 idle API-server connections starve the 9th client.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace shmguard::server {

class ElasticThreadPool : public httplib::TaskQueue {
 public:
  // Keeps `min_threads` alive; runs at most `max_threads` connections at once (later ones wait
  // in the queue); an idle extra thread exits after `idle_timeout`.
  ElasticThreadPool(size_t min_threads, size_t max_threads,
                    std::chrono::seconds idle_timeout = std::chrono::seconds(30));
  ~ElasticThreadPool() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

 private:
  void Work();
  const size_t min_threads_, max_threads_;
  const std::chrono::seconds idle_timeout_;
  std::mutex mu_;
  std::condition_variable cv_, all_done_;
  std::deque<std::function<void()>> jobs_;
  size_t threads_ = 0, idle_ = 0;
  bool shutdown_ = false;
};

}  // namespace shmguard::server
