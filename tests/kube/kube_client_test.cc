// KubeClient against FakeApi: connections kept alive and renewed when the CA changes, an answer's
// size and time bounded, a stream cancelled from another thread.
#include "kube/kube_client.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "kube/fake_api.h"

namespace shmguard::kube {
namespace {

using std::chrono::milliseconds;
using test::FakeAnswer;
using test::FakeApi;
using test::FakeRequest;
using Clock = std::chrono::steady_clock;

long MsSince(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - t).count());
}

// The file rewritten with the same text, its modification time a second later.
void Touch(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  struct stat st {};
  ::stat(path.c_str(), &st);
  std::ofstream(path) << text.str();
  struct timespec times[2] = {{st.st_mtim.tv_sec + 1, 0}, {st.st_mtim.tv_sec + 1, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

FakeAnswer Body(std::string body) {
  FakeAnswer a;
  a.body = std::move(body);
  return a;
}

TEST_CASE("KubeClient keeps one connection alive over many requests and opens a new one when the CA changes",
          "[kube_client][net]") {
  FakeApi api([](const FakeRequest&, size_t) { return Body(R"({"items":[]})"); });
  KubeClient client(api.Config(), 1000, 100);
  for (int i = 0; i < 50; ++i) {
    auto r = client.Request("GET", "/api/v1/pods");
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  CHECK(client.requests() == 50);
  CHECK(client.connections() == 1);
  Touch(api.File("ca.crt"));  // the kubelet rotated the bundle: parsed again, old connections dropped
  REQUIRE(client.Request("GET", "/api/v1/pods"));
  REQUIRE(client.Request("GET", "/api/v1/pods"));
  CHECK(client.connections() == 2);
}

TEST_CASE("KubeClient sends a request again on a new connection when the server closed the kept-alive one",
          "[kube_client][net]") {
  // The fake closes a connection idle for 1 s, as kube-apiserver does at 90 s: the next request
  // on it finds only its end. An Event or a ShmProfile write would be lost with it.
  FakeApi api([](const FakeRequest&, size_t) { return Body(R"({"items":[]})"); }, "/api/v1/pods",
              std::chrono::seconds(1));
  KubeClient client(api.Config(), 1000, 100);
  REQUIRE(client.Request("GET", "/api/v1/pods"));
  CHECK(client.connections() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto again = client.Request("GET", "/api/v1/pods");
  REQUIRE(again);
  CHECK(again->status == 200);
  CHECK(client.connections() == 2);
  CHECK(api.Seen().size() == 2);  // each sent once to a handler
}

TEST_CASE("KubeClient reads no more of an answer than its limit, and no longer than its deadline",
          "[kube_client][net]") {
  FakeApi api([](const FakeRequest& r, size_t) {
    if (r.param("slow") == "1") {
      FakeAnswer a;
      a.silence = milliseconds(10000);
      return a;
    }
    return Body("{\"x\":\"" + std::string(size_t{2} << 20, 'a') + "\"}");
  });
  KubeClient client(api.Config(), 1000, 100);

  RequestOptions small;
  small.max_body_bytes = size_t{1} << 20;
  auto big = client.Request("GET", "/api/v1/pods", "", "application/json", small);
  REQUIRE_FALSE(big);
  CHECK(big.error().code == Code::kInvalidInput);
  CHECK(big.error().message == "GET /api/v1/pods: the answer is larger than the limit of 1048576 bytes");
  // ...nor parses more JSON values than its limit.
  RequestOptions few;
  few.max_values = 1;
  auto many = client.Request("GET", "/api/v1/pods", "", "application/json", few);
  REQUIRE_FALSE(many);
  CHECK(many.error().message == "GET /api/v1/pods: the answer holds more than 1 JSON values");
  CHECK(client.Request("GET", "/api/v1/pods"));  // 64 MiB by default

  RequestOptions quick;
  quick.deadline = milliseconds(300);
  auto start = Clock::now();
  auto slow = client.Request("GET", "/api/v1/pods?slow=1", "", "application/json", quick);
  REQUIRE_FALSE(slow);
  CHECK(slow.error().message == "GET /api/v1/pods?slow=1: no whole answer within 300 ms");
  CHECK(MsSince(start) < 2000);
}

TEST_CASE("KubeClient's stream ends soon after it is cancelled from another thread", "[kube_client][net]") {
  FakeApi api([](const FakeRequest&, size_t) {
    FakeAnswer a;
    a.body = "{}\n";
    a.silence = milliseconds(20000);
    return a;
  });
  KubeClient client(api.Config(), 1000, 100);
  StreamCancel cancel;
  std::atomic<bool> reading{false};
  std::thread canceller([&] {
    while (!reading) std::this_thread::sleep_for(milliseconds(5));
    cancel.Cancel();
  });
  Clock::time_point first_line;
  StreamEnd end = client.Stream(
      "/api/v1/pods?watch=1",
      [&](std::string_view) {
        first_line = Clock::now();
        reading = true;
        return true;
      },
      std::chrono::seconds(30), cancel);
  canceller.join();
  CHECK(MsSince(first_line) < 2000);
  CHECK(end.status == 200);
  CHECK(end.error.empty());  // cancelled: not a failure
  // A token already cancelled starts nothing.
  auto after =
      client.Request("GET", "/api/v1/pods", "", "application/json", RequestOptions{1024, milliseconds(0), &cancel});
  REQUIRE_FALSE(after);
  CHECK(after.error().message == "GET /api/v1/pods: cancelled");
}

}  // namespace
}  // namespace shmguard::kube
