// OrderedPool: runs jobs on several threads and hands their results back in the order the jobs
// were submitted, on the submitting thread. The audit parses and evaluates documents in parallel
// but prints them, counts them and stops on errors exactly as a serial run would.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace shmguard::cli {

template <typename T>
class OrderedPool {
 public:
  // `threads` threads run the jobs: the one that calls Submit and Finish, and threads - 1
  // workers (one thread or none: every job runs inline in Submit). The submitting thread runs
  // queued jobs itself whenever it would otherwise wait for a result, so `threads` busy threads
  // share `threads` CPUs without preempting one another. At most `window` results wait to be
  // consumed, so memory stays bounded however long the input; Submit blocks until there is room.
  // `consume` runs on the submitting thread.
  OrderedPool(unsigned threads, size_t window, std::function<void(T&&)> consume)
      : window_(window < 1 ? 1 : window), consume_(std::move(consume)) {
    for (unsigned i = 1; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }

  // Jobs not started yet are dropped (nobody will consume them: Finish was not reached, say
  // because a result threw); running ones finish first.
  ~OrderedPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.clear();
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  OrderedPool(const OrderedPool&) = delete;
  OrderedPool& operator=(const OrderedPool&) = delete;

  // A job's exception is rethrown here or in Finish, in order, when its result's turn comes.
  void Submit(std::function<T()> job) {
    auto slot = std::make_shared<Slot>();
    slot->job = std::move(job);
    if (threads_.empty()) {
      Run(*slot);
      Consume(*slot);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(slot);
    }
    work_cv_.notify_one();
    pending_.push_back(std::move(slot));
    while (!pending_.empty() && (pending_.size() >= window_ || IsDone(*pending_.front()))) ConsumeFront();
  }

  // Waits for every submitted job and consumes the rest of the results.
  void Finish() {
    while (!pending_.empty()) ConsumeFront();
  }

 private:
  struct Slot {
    std::function<T()> job;
    std::optional<T> result;
    std::exception_ptr error;
    bool done = false;
  };

  static void Run(Slot& s) {
    try {
      s.result.emplace(s.job());
    } catch (...) {
      s.error = std::current_exception();
    }
    s.job = nullptr;
  }

  void Consume(Slot& s) {
    if (s.error) std::rethrow_exception(s.error);
    consume_(std::move(*s.result));
  }

  bool IsDone(Slot& s) {
    std::lock_guard<std::mutex> lock(mu_);
    return s.done;
  }

  // Waits for the oldest result, running queued jobs (the oldest first) while it is not ready.
  void ConsumeFront() {
    std::shared_ptr<Slot> s = std::move(pending_.front());
    pending_.pop_front();
    for (;;) {
      std::shared_ptr<Slot> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (queue_.empty()) done_cv_.wait(lock, [&] { return s->done; });
        if (s->done) break;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      RunAndMark(*job);
    }
    Consume(*s);
  }

  void RunAndMark(Slot& s) {
    Run(s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      s.done = true;
    }
    done_cv_.notify_one();  // only the submitting thread waits for results
  }

  void Work() {
    for (;;) {
      std::shared_ptr<Slot> s;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and nothing left
        s = std::move(queue_.front());
        queue_.pop_front();
      }
      RunAndMark(*s);
    }
  }

  const size_t window_;
  std::function<void(T&&)> consume_;
  std::vector<std::thread> threads_;
  std::deque<std::shared_ptr<Slot>> pending_;  // submitted, not consumed; submitter's thread only
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Slot>> queue_;  // submitted, not started
  bool stop_ = false;
};

}  // namespace shmguard::cli
