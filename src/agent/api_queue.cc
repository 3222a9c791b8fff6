// ApiQueue: one thread, a bounded queue of tasks.
#include "agent/api_queue.h"

namespace shmguard::agent {

bool ApiQueue::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) {
      if (tasks_.size() >= capacity_) {
        dropped_++;
        return false;
      }
      tasks_.push_back(std::move(task));
      cv_.notify_one();
      return true;
    }
  }
  task();  // not started (or stopped): on the caller's thread
  done_++;
  return true;
}

void ApiQueue::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ || stopping_) return;
  running_ = true;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> held(mu_);
    while (true) {
      cv_.wait(held, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) break;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      held.unlock();
      task();
      done_++;
      held.lock();
    }
  });
}

void ApiQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stopping_ = true;
    dropped_ += tasks_.size();
    tasks_.clear();
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
}

size_t ApiQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

void ApiQueue::Collect(std::ostream& out) const {
  WriteSample(out, "shmguard_agent_api_queue_depth", "gauge",
              "Writes to the API server (Events, ShmProfiles, resizes) waiting on the agent's queue.", depth());
  WriteSample(out, "shmguard_agent_api_queue_dropped_total", "counter",
              "Writes to the API server dropped because the agent's queue was full (1,000) or it stopped.", dropped_);
}

}  // namespace shmguard::agent
