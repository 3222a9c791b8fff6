// Reflector against FakeApi, an API server that misbehaves on cue: what it asks for (pages,
// versions, tokens), and that no failure, however persistent, makes it loop against the server.
// A hostile API server and throwing handlers: reflector_failures_test.cc. The reflector against
// a real API server is in e2e/.
#include "kube/reflector.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "kube/fake_api.h"
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

// A new token, its file's modification time a second later than before (the client re-reads the
// file when that time moves).
void RotateToken(const std::string& path, const std::string& token) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  std::ofstream(path) << token << "\n";
  struct timespec times[2] = {{st.st_mtim.tv_sec + 1, 0}, {st.st_mtim.tv_sec + 1, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

// "list rv=0", "list", "watch rv=100": what each request asked for.
std::vector<std::string> Asked(const std::vector<FakeRequest>& seen, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < std::min(n, seen.size()); ++i) {
    const auto& r = seen[i];
    std::string v = r.param("resourceVersion");
    out.push_back(std::string(r.watch ? "watch" : "list") + (v.empty() ? "" : " rv=" + v));
  }
  return out;
}

TEST_CASE("Reflector resumes from bookmarks, relists from etcd on 410 Gone, and sends a rotated token",
          "[reflector][net]") {
  std::string token_file;
  FakeApi api([&](const FakeRequest& r, size_t n) {
    FakeAnswer a;
    switch (n) {
      case 0: a.body = List("100", {Pod("a", "90")}); break;
      case 1:  // an event, then the version is too old for the watch cache
        a.body = "{\"type\":\"ADDED\",\"object\":" + Pod("b", "101") +
                 "}\n{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n";
        break;
      case 2: a.body = List("200", {Pod("a", "90"), Pod("b", "101")}); break;
      case 3:  // a bookmark moves the version on; the watch ends as the API server's timeout ends it
        a.body = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"250"}}})"
                 "\n";
        RotateToken(token_file, "second");  // the kubelet rotates it
        break;
      default: return Quiet();
    }
    (void)r;
    return a;
  });
  token_file = api.File("token");
  Running running(api);
  REQUIRE(api.WaitFor(5));
  running.Stop();

  auto seen = api.Seen();
  CHECK(Asked(seen, 5) ==
        std::vector<std::string>{"list rv=0", "watch rv=100", "list", "watch rv=200", "watch rv=250"});
  CHECK(seen[0].param("limit") == "500");
  CHECK(seen[1].param("allowWatchBookmarks") == "true");
  for (size_t i = 0; i < 4; ++i) CHECK(seen[i].authorization == "Bearer first");
  CHECK(seen[4].authorization == "Bearer second");
  // Each watch's timeout is drawn from client-go's 5 to 10 minutes.
  for (size_t i : {1, 3, 4}) {
    int timeout = std::stoi(seen[i].param("timeoutSeconds"));
    CHECK(timeout >= 300);
    CHECK(timeout <= 600);
  }
  CHECK(running.lists == std::vector<size_t>{1, 2});
  CHECK(running.events == std::vector<std::string>{"ADDED b"});
  CHECK(running.reflector.stats().lists == 2);
  CHECK(running.reflector.stats().failures == 0);  // a 410 is not a failure: it relists at once
}

TEST_CASE("Reflector lists 1,000 pods in pages of 500, the continue token escaped", "[reflector][net]") {
  std::vector<std::string> first, second;
  for (int i = 0; i < 500; ++i) first.push_back(Pod("p" + std::to_string(i), "1"));
  for (int i = 500; i < 1000; ++i) second.push_back(Pod("p" + std::to_string(i), "1"));
  const std::string token = "eyJ2Ijoi+bWV0/YS5=";  // base64: '+', '/', '='
  FakeApi api([&](const FakeRequest& r, size_t) {
    if (r.watch) return Quiet();
    FakeAnswer a;
    a.body = r.param("continue").empty() ? List("77", first, token) : List("77", second);
    if (!r.param("continue").empty() && r.param("continue") != token) a.status = 400;
    return a;
  });
  Running running(api);
  REQUIRE(api.WaitFor(3));
  running.Stop();
  auto seen = api.Seen();
  CHECK(Asked(seen, 3) == std::vector<std::string>{"list rv=0", "list", "watch rv=77"});
  CHECK(seen[1].param("continue") == token);  // the version rides in the token
  CHECK(seen[1].param("limit") == "500");
  CHECK(running.lists == std::vector<size_t>{1000});  // one list, handed on whole
  CHECK(running.reflector.stats().pages == 2);
}

TEST_CASE("Reflector backs off from 500s with jitter, and waits as long as a 429's Retry-After asks",
          "[reflector][net]") {
  FakeApi api([](const FakeRequest& r, size_t n) {
    FakeAnswer a;
    if (n < 4) {
      a.status = 500;
      a.body = R"({"kind":"Status","code":500})";
    } else if (n == 4) {
      a.status = 429;
      a.retry_after = "1";
    } else if (r.watch) {
      return Quiet();
    } else {
      a.body = List("5", {});
    }
    return a;
  });
  ReflectorOptions options;
  options.backoff_initial = milliseconds(100);
  options.backoff_max = milliseconds(400);
  Running running(api, options);
  REQUIRE(api.WaitFor(7, 10));
  running.Stop();
  auto seen = api.Seen();
  // The waits after each refusal: within [d/2, d] of 100, 200, 400, 400 ms; then the 429's 1 s.
  const long bounds[] = {100, 200, 400, 400};
  for (size_t i = 0; i < 4; ++i) {
    auto gap = std::chrono::duration_cast<milliseconds>(seen[i + 1].at - seen[i].at).count();
    CAPTURE(i, gap);
    CHECK(gap >= bounds[i] / 2);
    CHECK(gap <= bounds[i] + 250 * test::kSlowdown);  // the request's own time on loopback TLS
  }
  auto after_429 = std::chrono::duration_cast<milliseconds>(seen[5].at - seen[4].at).count();
  CHECK(after_429 >= 1000);
  CHECK(after_429 <= 1000 + 500 * test::kSlowdown);
  CHECK(Asked(seen, 7) == std::vector<std::string>{"list rv=0", "list rv=0", "list rv=0", "list rv=0", "list rv=0",
                                                   "list rv=0", "watch rv=5"});
  CHECK(running.reflector.stats().failures == 5);
}

TEST_CASE("Reflector does not loop on a failure that persists: it backs off and relists", "[reflector][net]") {
  struct Case {
    const char* name;
    std::function<FakeAnswer(const FakeRequest&)> watch;
  };
  const Case cases[] = {
      {"an ERROR event of code 500",
       [](const FakeRequest&) {
         FakeAnswer a;
         a.body = R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"etcd is down"}})"
                  "\n";
         return a;
       }},
      {"a watch the server ends at once with nothing in it", [](const FakeRequest&) { return FakeAnswer{}; }},
      {"503 Service Unavailable",
       [](const FakeRequest&) {
         FakeAnswer a;
         a.status = 503;
         return a;
       }},
      {"a line that is not an event, then the end",
       [](const FakeRequest&) {
         FakeAnswer a;
         a.body = "not json\n";
         return a;
       }},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      FakeApi api([&](const FakeRequest& r, size_t) {
        if (r.watch) return c.watch(r);
        FakeAnswer a;
        a.body = List("9", {Pod("a", "9")});
        return a;
      });
      ReflectorOptions options;
      options.backoff_initial = milliseconds(100);
      options.backoff_max = milliseconds(400);
      Running running(api, options);
      REQUIRE(api.WaitFor(8));
      running.Stop();
      auto seen = api.Seen();
      CHECK(Asked(seen, 8) == std::vector<std::string>{"list rv=0", "watch rv=9", "list rv=0", "watch rv=9",
                                                       "list rv=0", "watch rv=9", "list rv=0", "watch rv=9"});
      // Each failed watch is followed by a wait of at least half the backoff, 100, 200, 400 ms
      // doubling: without it the rate limit (1,000 a second here) would be the only bound.
      const long at_least[] = {50, 100, 200};
      for (size_t i = 0; i < 3; ++i) {
        auto gap = std::chrono::duration_cast<milliseconds>(seen[2 * i + 2].at - seen[2 * i + 1].at).count();
        CAPTURE(i, gap);
        CHECK(gap >= at_least[i]);
      }
      CHECK(running.reflector.stats().failures >= 3);
    }
  }
}

TEST_CASE("Reflector drops a watch that stays silent past its limit and watches again", "[reflector][net]") {
  FakeApi api([](const FakeRequest& r, size_t) {
    if (r.watch) return Quiet();  // not even a bookmark
    FakeAnswer a;
    a.body = List("3", {});
    return a;
  });
  ReflectorOptions options;
  options.silence = std::chrono::seconds(1);
  options.backoff_initial = milliseconds(100);
  Running running(api, options);
  REQUIRE(api.WaitFor(4));
  running.Stop();
  auto seen = api.Seen();
  CHECK(Asked(seen, 4) == std::vector<std::string>{"list rv=0", "watch rv=3", "list rv=0", "watch rv=3"});
  auto dropped_after = std::chrono::duration_cast<milliseconds>(seen[2].at - seen[1].at).count();
  CHECK(dropped_after >= 1000);
  CHECK(dropped_after <= 1000 + 1500 * test::kSlowdown);
}

TEST_CASE("Reflector lists again when an answer is not a list, and after a line that is not an event",
          "[reflector][net]") {
  FakeApi api([](const FakeRequest& r, size_t n) {
    FakeAnswer a;
    if (n == 0) {
      a.body = R"({"items":[]})";  // no resourceVersion
    } else if (n == 1) {
      a.body = R"({"metadata":{"resourceVersion":7},"items":[]})";  // not text
    } else if (n == 2) {
      a.body = List("9", {Pod("a", "9")});
    } else if (n == 3) {
      a.body =
          "{\"type\":\"ADDED\",\"object\":{\"metadata\":\"x\"}}\n{\"type\":\"ADDED\",\"object\":" + Pod("b", "10") +
          "}\n{\"type\":3,\"object\":{}}\n";
    } else if (r.watch) {
      return Quiet();
    } else {
      a.body = List("11", {Pod("a", "9"), Pod("b", "10")});
    }
    return a;
  });
  ReflectorOptions options;
  options.backoff_initial = milliseconds(20);
  Running running(api, options);
  REQUIRE(api.WaitFor(6));
  running.Stop();
  CHECK(Asked(api.Seen(), 6) ==
        std::vector<std::string>{"list rv=0", "list rv=0", "list rv=0", "watch rv=9", "list rv=0", "watch rv=11"});
  CHECK(running.reflector.stats().lists == 2);  // the two answers that were not lists are not counted
  CHECK(running.reflector.stats().failures == 3);
  // An event whose metadata is not an object is handed on (its version cannot be read, so the
  // version stays the last one read); the line whose type is not text ends the watch.
  CHECK(running.events == std::vector<std::string>{"ADDED ?", "ADDED b"});
  CHECK(running.lists == std::vector<size_t>{1, 2});
}

// A hostile or broken API server: nothing it sends ends the process or makes it hold more than
// the reflector's bounds. Each answer below fails its list or watch, which is counted and tried
// again after the backoff.
}  // namespace
}  // namespace shmguard::kube
