// OrderedPool: results come back in submission order whatever order the workers finish in;
// exceptions come back at their turn; and the audit gives the same output on any number of jobs.
#include "cli/commands/ordered_pool.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>
#include <stdexcept>

#include "cli/commands/audit_command.h"
#include "test_util.h"

namespace shmguard::cli {
namespace {

TEST_CASE("OrderedPool hands results back in submission order", "[ordered_pool]") {
  for (unsigned threads : {1u, 2u, 4u}) {
    CAPTURE(threads);
    std::vector<int> seen;
    std::atomic<int> running{0}, most{0};
    {
      OrderedPool<int> pool(threads, 3, [&](int&& v) { seen.push_back(v); });
      for (int i = 0; i < 40; ++i) {
        pool.Submit([i, &running, &most] {
          int now = ++running;
          most = std::max(most.load(), now);
          // Early jobs sleep longest, so later ones finish first.
          std::this_thread::sleep_for(std::chrono::microseconds((40 - i) * 50));
          --running;
          return i;
        });
        CHECK(static_cast<int>(seen.size()) >= i + 1 - 3);  // never more than `window` waiting
      }
      pool.Finish();
    }
    std::vector<int> expected(40);
    for (int i = 0; i < 40; ++i) expected[static_cast<size_t>(i)] = i;
    CHECK(seen == expected);
    CHECK(most.load() <= static_cast<int>(threads));
  }
}

TEST_CASE("OrderedPool's submitting thread runs jobs rather than wait", "[ordered_pool]") {
  // Jobs on the worker wait (up to a second) for a job to have run on the submitting thread: a
  // pool whose submitter only waited would time out.
  const auto submitter = std::this_thread::get_id();
  std::atomic<bool> helped{false}, timed_out{false};
  std::vector<int> seen;
  {
    OrderedPool<int> pool(2, 4, [&](int&& v) { seen.push_back(v); });
    for (int i = 0; i < 20; ++i) {
      pool.Submit([i, submitter, &helped, &timed_out] {
        if (std::this_thread::get_id() == submitter) {
          helped = true;
        } else if (!timed_out) {
          auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
          while (!helped && std::chrono::steady_clock::now() < until) std::this_thread::yield();
          if (!helped) timed_out = true;
        }
        return i;
      });
    }
    pool.Finish();
  }
  CHECK(helped);
  CHECK_FALSE(timed_out);
  CHECK(seen.size() == 20);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
}

TEST_CASE("OrderedPool rethrows a job's exception at its turn", "[ordered_pool]") {
  for (unsigned threads : {1u, 3u}) {
    CAPTURE(threads);
    std::vector<int> seen;
    OrderedPool<int> pool(threads, 8, [&](int&& v) { seen.push_back(v); });
    auto run = [&] {  // Submit may already consume the failed result; Finish surely does
      pool.Submit([] { return 1; });
      pool.Submit([]() -> int { throw std::runtime_error("boom"); });
      pool.Submit([] { return 3; });
      pool.Finish();
    };
    CHECK_THROWS_WITH(run(), "boom");
    CHECK(seen == std::vector<int>{1});
  }
}

TEST_CASE("OrderedPool drops the jobs nobody will consume when it goes early", "[ordered_pool]") {
  std::atomic<int> ran{0};
  {
    OrderedPool<int> pool(2, 1000, [](int&&) {});
    for (int i = 0; i < 200; ++i) {
      pool.Submit([&ran] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return ++ran;
      });
    }
  }  // no Finish: as when a result throws
  CHECK(ran.load() < 200);
}

TEST_CASE("The audit prints the same on 1 and 4 jobs", "[ordered_pool][audit_command][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  auto run = [](int jobs, const std::string& output) {
    AuditOptions o{
        {test::CorpusPath(), std::string(SOURCE_DIR) + "/examples"}, *ParseAuditFormat(output), Severity::kError, jobs};
    std::istringstream in;
    std::ostringstream out, err;
    auto code = RunAudit(o, Policy{}, in, out, err);
    return std::make_tuple(code, out.str(), err.str());
  };
  for (const char* output : {"table", "json", "patched"}) {
    CAPTURE(output);
    auto one = run(1, output);
    auto four = run(4, output);
    CHECK(std::get<1>(one).size() > 10000);
    CHECK(one == four);
  }
}

}  // namespace
}  // namespace shmguard::cli
