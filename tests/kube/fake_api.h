// FakeApi: an API server on loopback (TLS, its own CA) that misbehaves on cue, where the real
// one cannot be made to: each GET of the collection is answered by the test's `answer`, which
// sees the request (a list page or a watch, with its query) and decides — a list page, a watch's
// event lines, a status with a Retry-After, or silence. Every request is recorded with when it
// came, and how many TLS connections were opened.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/kube_config.h"
#include "tls_fixture.h"

namespace shmguard::test {

struct FakeRequest {
  std::string path;  // "/api/v1/pods", or what matched a pattern given as the collection
  bool watch = false;
  std::string query;  // "limit=500&resourceVersion=0", "watch=1&...&resourceVersion=12"
  std::string param(const std::string& name) const {
    const std::string key = name + "=";
    for (size_t from = 0; from < query.size();) {
      size_t end = query.find('&', from);
      if (end == std::string::npos) end = query.size();
      if (query.compare(from, key.size(), key) == 0) return query.substr(from + key.size(), end - from - key.size());
      from = end + 1;
    }
    return "";
  }
  std::string authorization;
  std::chrono::steady_clock::time_point at;
};

struct FakeAnswer {
  int status = 200;
  std::string body;                      // a list page, or a watch's event lines
  std::string retry_after;               // sent when not empty
  std::chrono::milliseconds silence{0};  // then this long of nothing, and the connection dropped
};

class FakeApi {
 public:
  using Answer = std::function<FakeAnswer(const FakeRequest&, size_t n)>;  // n: the request's number, from 0

  // `collection`: a path, or a pattern of paths (cpp-httplib's regular expression);
  // `keep_alive`: how long a connection may be idle before the fake closes it.
  explicit FakeApi(Answer answer, const std::string& collection = "/api/v1/pods",
                   std::chrono::seconds keep_alive = std::chrono::seconds(5))
      : answer_(std::move(answer)) {
    MakeCa(dir_.path());
    IssueCert(dir_.path(), "localhost", dir_.File("tls.crt"), dir_.File("tls.key"));
    server_ = std::make_unique<httplib::SSLServer>(dir_.File("tls.crt").c_str(), dir_.File("tls.key").c_str());
    server_->set_keep_alive_max_count(1000);
    server_->set_keep_alive_timeout(keep_alive.count());
    server_->Get(collection, [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); });
    port_ = server_->bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_->listen_after_bind(); });
    std::ofstream(File("token")) << "first\n";
  }
  ~FakeApi() {
    stopping_ = true;
    server_->stop();
    serving_.join();
  }
  std::string File(const std::string& name) const { return dir_.File(name); }
  kube::KubeConfig Config() const {
    kube::KubeConfig c;
    c.server = "https://localhost:" + std::to_string(port_);
    c.ca_file = File("ca.crt");
    c.token_file = File("token");
    return c;
  }
  std::vector<FakeRequest> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  // Waits up to `seconds` for `n` requests.
  bool WaitFor(size_t n, int seconds = 5) {
    for (int i = 0; i < seconds * 100; ++i) {
      if (Seen().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  void Serve(const httplib::Request& req, httplib::Response& res) {
    FakeRequest r;
    r.path = req.path;
    r.watch = req.get_param_value("watch") == "1";
    std::string query;
    for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
    r.query = query;
    r.authorization = req.get_header_value("Authorization");
    r.at = std::chrono::steady_clock::now();
    size_t n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      n = seen_.size();
      seen_.push_back(r);
    }
    FakeAnswer a = answer_(r, n);
    res.status = a.status;
    if (!a.retry_after.empty()) res.set_header("Retry-After", a.retry_after);
    if (a.silence.count() == 0) {
      res.set_content(a.body, "application/json");
      return;
    }
    // The body, then nothing for a while (a watch with no more changes and no bookmarks), then
    // the connection is dropped. (Never sink.done(): cpp-httplib's chunked ending initializes a
    // static in the uninstrumented library, which ThreadSanitizer reports as a race.)
    res.set_chunked_content_provider("application/json", [this, a](size_t, httplib::DataSink& sink) {
      if (!a.body.empty()) sink.write(a.body.data(), a.body.size());
      const auto until = std::chrono::steady_clock::now() + a.silence;
      while (!stopping_ && std::chrono::steady_clock::now() < until) {
        if (!sink.is_writable()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      return false;
    });
  }

  Answer answer_;
  TempDir dir_;
  std::mutex mu_;
  std::vector<FakeRequest> seen_;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread serving_;
};

}  // namespace shmguard::test
