// KubeClient's parts that need no API server: the backoff's bounds, the rate limit, in-cluster
// configuration outside a pod. The client against a real API server is in e2e/.
#include "server/kube_client.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using std::chrono::milliseconds;

TEST_CASE("Backoff doubles to its maximum, each wait jittered within [d/2, d], and resets", "[kube_client]") {
  Backoff b(milliseconds(100), milliseconds(1000));
  const long bounds[] = {100, 200, 400, 800, 1000, 1000};
  for (long d : bounds) {
    CAPTURE(d);
    auto w = b.Next().count();
    CHECK(w >= d / 2);
    CHECK(w <= d);
  }
  b.Reset();
  CHECK(b.Next().count() <= 100);
}

TEST_CASE("RateLimiter lets a burst through and then holds to its rate", "[kube_client]") {
  const RateLimiter::TimePoint t0{};
  RateLimiter limiter(200, 3, t0);  // 5 ms a token once the burst is spent
  using ms = std::chrono::duration<double, std::milli>;
  struct Case {
    double at_ms, wait_ms;
  };
  const Case cases[] = {
      {0, 0},  {0, 0},  {0, 0},  // the burst
      {0, 5},  {0, 10},          // owed: each waits for its own token
      {20, 0}, {20, 0},          // 20 ms refill 4 tokens: the debt of 2 is paid, 2 are left
      {20, 5},                   // ... and no third
  };
  for (const auto& c : cases) {
    CAPTURE(c.at_ms, c.wait_ms);
    auto now = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(ms(c.at_ms));
    CHECK(ms(limiter.Reserve(now)).count() == Approx(c.wait_ms).margin(1e-6));
  }
}

TEST_CASE("KubeConfig::InCluster fails outside a pod, naming what is missing", "[kube_client]") {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  if (host) return;  // running inside a pod: nothing to check here
  auto c = KubeConfig::InCluster();
  REQUIRE_FALSE(c);
  CHECK(c.error().code == Code::kIo);
  CHECK(c.error().message.find("KUBERNETES_SERVICE_HOST") != std::string::npos);
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A new token, its file's modification time a second later than before (the client re-reads the
// file when that time moves).
void RotateToken(const std::string& path, const std::string& token) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  WriteFile(path, token + "\n");
  struct timespec times[2] = {{st.st_mtim.tv_sec + 1, 0}, {st.st_mtim.tv_sec + 1, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

// A fake API server on loopback (TLS, its own CA): GET /api/v1/pods answers `lists` in turn, and
// each watch the next of `watches` (event lines), then empty streams. `on_watch(n, token_file)`
// runs as the n-th watch (from 1) is answered. Seen() is what was asked: "list Bearer T", "watch rv=N Bearer T".
class FakeApi {
 public:
  FakeApi(std::vector<std::string> lists, std::vector<std::string> watches,
          std::function<void(size_t, const std::string&)> on_watch = nullptr)
      : lists_(std::move(lists)), watches_(std::move(watches)), on_watch_(std::move(on_watch)) {
    test::MakeCa(dir_.path());
    test::IssueCert(dir_.path(), "localhost", dir_.File("tls.crt"), dir_.File("tls.key"));
    server_ = std::make_unique<httplib::SSLServer>(dir_.File("tls.crt").c_str(), dir_.File("tls.key").c_str());
    server_->Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) { Answer(req, res); });
    port_ = server_->bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_->listen_after_bind(); });
    WriteFile(File("token"), "first\n");
  }
  ~FakeApi() {
    server_->stop();
    serving_.join();
  }
  std::string File(const std::string& name) const { return dir_.File(name); }
  KubeConfig Config() const {
    KubeConfig c;
    c.server = "https://localhost:" + std::to_string(port_);
    c.ca_file = File("ca.crt");
    c.token_file = File("token");
    return c;
  }
  std::vector<std::string> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  // Waits up to 5 s for `n` requests.
  bool WaitFor(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (Seen().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  void Answer(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string who = " " + req.get_header_value("Authorization");
    if (req.get_param_value("watch") != "1") {
      seen_.push_back("list" + who);
      res.set_content(lists_[std::min(next_list_++, lists_.size() - 1)], "application/json");
      return;
    }
    seen_.push_back("watch rv=" + req.get_param_value("resourceVersion") + who);
    std::string body = next_watch_ < watches_.size() ? watches_[next_watch_] : "";
    ++next_watch_;
    if (on_watch_) on_watch_(next_watch_, File("token"));
    if (body.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    res.set_content(body, "application/json");
  }

  test::TempDir dir_;
  std::vector<std::string> lists_, watches_;
  std::function<void(size_t, const std::string&)> on_watch_;
  std::mutex mu_;
  std::vector<std::string> seen_;
  size_t next_list_ = 0, next_watch_ = 0;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread serving_;
};

TEST_CASE("KubeClient::ListWatch resumes from bookmarks, relists on 410 Gone, and re-reads its token",
          "[kube_client][net]") {
  FakeApi api(
      {R"({"metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"a"}}]})",
       R"({"metadata":{"resourceVersion":"200"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})"},
      {
          // An event, then the version is too old: relist.
          R"({"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"101"}}})"
          "\n"
          R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
          "\n",
          // A bookmark moves the version on; the watch ends as the API server's timeout ends it.
          R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"250"}}})"
          "\n",
      },
      [](size_t n, const std::string& token_file) {
        if (n == 2) RotateToken(token_file, "second");  // the kubelet rotates it
      });
  KubeClient client(api.Config(), 1000, 100);
  std::atomic<bool> stop{false};
  std::vector<size_t> listed;
  std::vector<std::string> events;
  std::thread watching([&] {
    client.ListWatch(
        "/api/v1/pods", [&](const nlohmann::json& items) { listed.push_back(items.size()); },
        [&](const std::string& type, const nlohmann::json& o) {
          events.push_back(type + " " + o["metadata"].value("name", ""));
        },
        stop, 5);
  });
  REQUIRE(api.WaitFor(5));
  stop = true;
  watching.join();

  auto seen = api.Seen();
  const std::vector<std::string> want = {
      "list Bearer first",
      "watch rv=100 Bearer first",
      "list Bearer first",
      "watch rv=200 Bearer first",
  };
  CHECK(std::vector<std::string>(seen.begin(), seen.begin() + 4) == want);
  CHECK(seen[4] == "watch rv=250 Bearer second");  // from the bookmark, with the new token
  CHECK(listed == std::vector<size_t>{1, 2});
  CHECK(events == std::vector<std::string>{"ADDED b"});
  CHECK(client.lists() == 2);
}

TEST_CASE("KubeClient::ListWatch lists again when an answer is not a list, and skips unreadable events",
          "[kube_client][net]") {
  FakeApi api({R"({"items":[]})", R"({"metadata":{"resourceVersion":7},"items":[]})",
               R"({"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"}}]})"},
              {R"({"type":3,"object":{}})"
               "\n"
               R"({"type":"ADDED","object":{"metadata":"x"}})"
               "\n"
               R"({"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"10"}}})"
               "\n"});
  KubeClient client(api.Config(), 1000, 100);
  std::atomic<bool> stop{false};
  std::vector<std::string> events;
  std::thread watching([&] {
    client.ListWatch(
        "/api/v1/pods", [](const nlohmann::json&) {},
        [&](const std::string& type, const nlohmann::json& o) {
          events.push_back(type + " " + (o["metadata"].is_object() ? o["metadata"].value("name", "") : "?"));
        },
        stop, 5);
  });
  REQUIRE(api.WaitFor(5));
  stop = true;
  watching.join();
  auto seen = api.Seen();
  CHECK(std::vector<std::string>(seen.begin(), seen.begin() + 5) ==
        std::vector<std::string>{"list Bearer first", "list Bearer first", "list Bearer first",
                                 "watch rv=9 Bearer first", "watch rv=10 Bearer first"});
  CHECK(client.lists() == 1);  // the two answers that were not lists are not counted
  // The event whose type is not text is skipped; the one whose metadata is not an object is
  // handed on (its version cannot be read, so the next watch starts from the last one).
  CHECK(events == std::vector<std::string>{"ADDED ?", "ADDED b"});
}

}  // namespace
}  // namespace shmguard::server
