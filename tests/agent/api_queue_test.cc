// ApiQueue: in order on its own thread once started, on the caller's before; bounded, with what
// does not fit dropped and counted; Stop joins and drops what waits.
#include "agent/api_queue.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <vector>

#include "test_util.h"

namespace shmguard::agent {
namespace {

TEST_CASE("ApiQueue runs a task at once before Start, and in order on its thread after", "[api_queue]") {
  ApiQueue q(10);
  std::vector<int> order;
  std::mutex mu;
  std::thread::id ran_on;
  CHECK(q.Post([&] { ran_on = std::this_thread::get_id(); }));
  CHECK(ran_on == std::this_thread::get_id());  // not started: the caller's thread
  q.Start();
  for (int i = 0; i < 5; ++i) {
    CHECK(q.Post([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      ran_on = std::this_thread::get_id();
    }));
  }
  REQUIRE(test::Eventually([&] { return q.done() == 6; }));
  std::lock_guard<std::mutex> lock(mu);
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(ran_on != std::this_thread::get_id());
  CHECK(q.dropped() == 0);
}

TEST_CASE("ApiQueue drops and counts what does not fit, and what waits when it stops", "[api_queue]") {
  ApiQueue q(3);
  q.Start();
  std::mutex gate;
  std::unique_lock<std::mutex> held(gate);
  std::atomic<bool> started{false};
  CHECK(q.Post([&] {
    started = true;
    std::lock_guard<std::mutex> wait_for(gate);  // the first task hangs, as a slow API call
  }));
  REQUIRE(test::Eventually([&] { return started.load(); }));
  int ran = 0;
  for (int i = 0; i < 3; ++i) CHECK(q.Post([&] { ++ran; }));
  CHECK(q.depth() == 3);
  CHECK_FALSE(q.Post([&] { ++ran; }));  // full
  CHECK(q.dropped() == 1);
  std::thread stopper([&] { q.Stop(); });
  REQUIRE(test::Eventually([&] { return q.dropped() == 4; }));  // the three waiting, dropped
  held.unlock();
  stopper.join();
  CHECK(ran == 0);
  CHECK(q.done() == 1);
  // Stopped: a task runs on the caller's thread again.
  CHECK(q.Post([&] { ++ran; }));
  CHECK(ran == 1);
}

}  // namespace
}  // namespace shmguard::agent
