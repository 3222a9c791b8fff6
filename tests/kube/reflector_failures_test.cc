// Reflector against an API server that sends what it should not (answers over their bounds,
// lines that are not events, lists that are not lists) and handlers that throw: each is a failure
// of that list or watch, counted and backed off from, and the reflector goes on.
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "kube/fake_api.h"
#include "kube/reflector.h"
#include "kube/reflector_fixture.h"
#include "test_util.h"

namespace shmguard::kube {
namespace {

using reflector_test::List;
using reflector_test::Pod;
using reflector_test::Quiet;
using reflector_test::Running;
using std::chrono::milliseconds;
using test::FakeAnswer;
using test::FakeApi;
using test::FakeRequest;

TEST_CASE("Reflector survives what a hostile API server sends, within its bounds", "[reflector][net]") {
  struct Case {
    const char* name;
    std::function<FakeAnswer(const FakeRequest&, size_t)> answer;
    ReflectorOptions options;
    bool oversized;
    size_t requests = 3;  // made before the test looks
  };
  auto with = [](auto set) {
    ReflectorOptions o;
    o.backoff_initial = milliseconds(10);
    o.backoff_max = milliseconds(20);
    set(o);
    return o;
  };
  const Case cases[] = {
      {"an ERROR event whose code is a string",
       [](const FakeRequest& r, size_t) {
         FakeAnswer a;
         a.body = r.watch ? R"({"type":"ERROR","object":{"kind":"Status","code":"410"}})"
                            "\n"
                          : List("5", {Pod("a", "5")});
         return a;
       },
       with([](ReflectorOptions&) {}), false},
      {"a watch line that never ends",
       [](const FakeRequest& r, size_t) {
         FakeAnswer a;
         a.body = r.watch ? std::string(size_t{4} << 20, 'x') : List("5", {Pod("a", "5")});
         return a;
       },
       with([](ReflectorOptions& o) { o.max_answer_bytes = size_t{1} << 20; }), true},
      {"a list that always names a next page",
       [](const FakeRequest& r, size_t n) {
         FakeAnswer a;
         if (r.watch) return Quiet();
         a.body = List("5", {Pod("p" + std::to_string(n), "5")}, "next-" + std::to_string(n));
         return a;
       },
       with([](ReflectorOptions& o) { o.max_list_pages = 20; }), true, 25},
      {"one answer of a million empty items",
       [](const FakeRequest& r, size_t) {
         if (r.watch) return Quiet();
         FakeAnswer a;
         std::string items;
         items.reserve(size_t{3} << 20);
         for (int i = 0; i < 1'000'000; ++i) items += i ? ",{}" : "{}";
         a.body = R"({"metadata":{"resourceVersion":"5"},"items":[)" + items + "]}";
         return a;
       },
       with([](ReflectorOptions& o) { o.max_values = 100'000; }), true},
      {"more items than a list may hold",
       [](const FakeRequest& r, size_t) {
         if (r.watch) return Quiet();
         std::vector<std::string> pods;
         for (int i = 0; i < 30; ++i) pods.push_back(Pod("p" + std::to_string(i), "5"));
         FakeAnswer a;
         a.body = List("5", pods);
         return a;
       },
       with([](ReflectorOptions& o) { o.max_list_items = 10; }), true},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      FakeApi api(c.answer);
      Running running(api, c.options);
      REQUIRE(api.WaitFor(c.requests, 20));
      running.Stop();
      CHECK(running.reflector.stats().failures >= 1);
      CHECK((running.reflector.stats().oversized >= 1) == c.oversized);
      // A list past a bound is never handed on; the watch cases list first.
      const bool list_bound = std::string(c.name).find("list") != std::string::npos ||
                              std::string(c.name).find("items") != std::string::npos;
      if (list_bound) CHECK(running.lists.empty());
    }
  }
}

// What a handler throws on the reflector's thread — a bug, a bad_alloc — is a failure of that
// list or watch, counted, and the reflector goes on; the process does not end.
TEST_CASE("Reflector counts what a handler throws as a failure and goes on", "[reflector][net]") {
  FakeApi api([](const FakeRequest& r, size_t) {
    if (r.watch) return Quiet();
    FakeAnswer a;
    a.body = List("5", {Pod("a", "5")});
    return a;
  });
  auto client = std::make_shared<KubeClient>(api.Config(), 1000, 100);
  std::atomic<int> calls{0};
  ReflectorOptions o;
  o.path = "/api/v1/pods";
  o.backoff_initial = milliseconds(10);
  o.backoff_max = milliseconds(20);
  Reflector reflector(client, o,
                      ReflectorHandlers{[&](std::vector<nlohmann::json>&&) {
                                          if (calls++ % 2 == 0) throw std::bad_alloc();
                                          throw std::runtime_error("a bug");
                                        },
                                        [](const std::string&, nlohmann::json&&) {}});
  StreamCancel cancel;
  std::thread thread([&] { reflector.Run(cancel); });
  REQUIRE(api.WaitFor(4));
  cancel.Cancel();
  thread.join();
  CHECK(reflector.stats().exceptions >= 2);
  CHECK(reflector.stats().failures >= 2);
}

}  // namespace
}  // namespace shmguard::kube
