// ElasticThreadPool: detached workers counted under a mutex; shutdown waits for the count to
// reach zero.
#include "server/thread_pool.h"

namespace shmguard::server {

ElasticThreadPool::ElasticThreadPool(size_t min_threads, size_t max_threads,
                                     std::chrono::seconds idle_timeout)
    : min_threads_(min_threads), max_threads_(std::max(max_threads, min_threads)), idle_timeout_(idle_timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < min_threads_; ++i) {
    ++threads_;
    std::thread([this] { Work(); }).detach();
  }
}

ElasticThreadPool::~ElasticThreadPool() { shutdown(); }

void ElasticThreadPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back(std::move(fn));
  if (idle_ < jobs_.size() && threads_ < max_threads_) {
    ++threads_;
    std::thread([this] { Work(); }).detach();
  }
  cv_.notify_one();
}

void ElasticThreadPool::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
  all_done_.wait(lock, [this] { return threads_ == 0; });
}

void ElasticThreadPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    bool woke = cv_.wait_for(lock, idle_timeout_, [this] { return shutdown_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty() && (shutdown_ || (!woke && threads_ > min_threads_))) break;
    if (jobs_.empty()) continue;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
  if (--threads_ == 0) all_done_.notify_all();
}

}  // namespace shmguard::server
