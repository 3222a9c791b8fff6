// KubeClient over cpp-httplib: requests, the token file, backoff, the rate limit, list+watch.
#include "server/kube_client.h"

#include <httplib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace shmguard::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";

std::unique_ptr<httplib::Client> Connect(const KubeConfig& c, time_t read_timeout_seconds) {
  auto client = std::make_unique<httplib::Client>(c.server);
  client->set_ca_cert_path(c.ca_file);
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5);
  client->set_read_timeout(read_timeout_seconds);
  client->set_write_timeout(10);
  client->set_keep_alive(true);
  return client;
}

bool Stopping(const std::atomic<bool>& stop, std::chrono::milliseconds wait) {
  auto until = Clock::now() + wait;
  while (Clock::now() < until) {
    if (stop) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return stop;
}

std::string WithQuery(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

}  // namespace

Result<KubeConfig> KubeConfig::InCluster() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port) {
    return MakeError(Code::kIo, "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  KubeConfig c{"https://" + h + ":" + port, std::string(kServiceAccount) + "/ca.crt",
               std::string(kServiceAccount) + "/token"};
  struct stat st {};
  if (::stat(c.token_file.c_str(), &st) != 0) return MakeError(Code::kIo, "no service account token", c.token_file);
  return c;
}

std::string KubeResponse::Message() const {
  if (body.is_object()) {
    auto it = body.find("message");
    if (it != body.end() && it->is_string()) return it->get<std::string>();
  }
  return "HTTP " + std::to_string(status);
}

std::chrono::milliseconds Backoff::Next() {
  auto d = next_;
  next_ = std::min(max_, next_ * 2);
  std::uniform_int_distribution<long> pick(d.count() / 2, d.count());
  return std::chrono::milliseconds(pick(rng_));
}

RateLimiter::RateLimiter(double qps, int burst, TimePoint start)
    : qps_(qps), tokens_(burst), burst_(burst), last_(start) {}

std::chrono::duration<double> RateLimiter::Reserve(TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + qps_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  tokens_ -= 1;
  return std::chrono::duration<double>(tokens_ >= 0 ? 0 : -tokens_ / qps_);
}

void RateLimiter::Wait() {
  auto wait = Reserve(Clock::now());
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

KubeClient::KubeClient(KubeConfig config, double qps, int burst) : config_(std::move(config)), limiter_(qps, burst) {}

std::string KubeClient::Token() {
  std::lock_guard<std::mutex> lock(token_mu_);
  struct stat st {};
  if (::stat(config_.token_file.c_str(), &st) != 0) return token_;
  auto mtime = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                     std::chrono::nanoseconds(st.st_mtim.tv_nsec));
  if (token_.empty() || mtime != token_mtime_) {
    std::ifstream in(config_.token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string t = ss.str();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (!t.empty()) {
      token_ = t;
      token_mtime_ = mtime;
    }
  }
  return token_;
}

Result<KubeResponse> KubeClient::Request(const std::string& method, const std::string& path, const std::string& body,
                                         const std::string& content_type) {
  limiter_.Wait();
  auto client = Connect(config_, 30);
  httplib::Headers headers = {{"Authorization", "Bearer " + Token()}, {"Accept", "application/json"}};
  auto send = [&]() -> std::optional<httplib::Result> {
    if (method == "GET") return client->Get(path.c_str(), headers);
    if (method == "POST") return client->Post(path.c_str(), headers, body, content_type.c_str());
    if (method == "PATCH") return client->Patch(path.c_str(), headers, body, content_type.c_str());
    if (method == "PUT") return client->Put(path.c_str(), headers, body, content_type.c_str());
    if (method == "DELETE") return client->Delete(path.c_str(), headers);
    return std::nullopt;
  };
  auto sent = send();
  if (!sent) return MakeError(Code::kInternal, "unsupported method " + method);
  httplib::Result& res = *sent;
  if (!res) return MakeError(Code::kIo, method + " " + path + ": " + httplib::to_string(res.error()), config_.server);
  KubeResponse out;
  out.status = res->status;
  out.body = nlohmann::json::parse(res->body, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

std::string KubeClient::WatchOnce(const std::string& path, const std::string& version,
                                  const std::function<void(const std::string&, const nlohmann::json&)>& on_event,
                                  const std::atomic<bool>& stop, int watch_seconds, bool& broken) {
  ++watches_;
  // The read timeout outlasts the API server's own end of the watch; a bookmark arrives about
  // once a minute, so a longer silence is a dead connection.
  auto client = Connect(config_, watch_seconds + 30);
  httplib::Headers headers = {{"Authorization", "Bearer " + Token()}, {"Accept", "application/json"}};
  std::string query = "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(watch_seconds) +
                      "&resourceVersion=" + version;
  std::string last = version, buffer;
  bool gone = false;
  int status = 0;
  auto res = client->Get(
      WithQuery(path, query).c_str(), headers,
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t n) {
        buffer.append(data, n);
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
          auto event = nlohmann::json::parse(buffer.begin() + static_cast<long>(start),
                                             buffer.begin() + static_cast<long>(nl), nullptr, false);
          if (!event.is_object()) continue;
          std::string type = event.value("type", "");
          const auto& object = event["object"];
          if (type == "ERROR") {
            gone = object.is_object() && object.value("code", 0) == 410;
            return false;
          }
          if (object.is_object() && object.contains("metadata")) {
            last = object["metadata"].value("resourceVersion", last);
          }
          if (type != "BOOKMARK") on_event(type, object);
        }
        buffer.erase(0, start);
        return !stop.load();
      });
  if (gone || status == 410) return "";
  if (!res && !stop && res.error() != httplib::Error::Canceled) broken = true;
  if (status != 0 && status != 200) broken = true;
  return last;
}

void KubeClient::ListWatch(const std::string& path, const std::function<void(const nlohmann::json& items)>& on_list,
                           const std::function<void(const std::string& type, const nlohmann::json& object)>& on_event,
                           const std::atomic<bool>& stop, int watch_seconds) {
  Backoff backoff(std::chrono::milliseconds(500), std::chrono::seconds(30));
  std::string version;
  while (!stop) {
    if (version.empty()) {
      auto list = Request("GET", path);
      if (!list || !list->ok() || !list->body.is_object()) {
        if (Stopping(stop, backoff.Next())) return;
        continue;
      }
      ++lists_;
      on_list(list->body.value("items", nlohmann::json::array()));
      version = list->body["metadata"].value("resourceVersion", "");
      backoff.Reset();
      if (version.empty()) {
        if (Stopping(stop, backoff.Next())) return;
        continue;
      }
    }
    bool broken = false;
    version = WatchOnce(path, version, on_event, stop, watch_seconds, broken);
    if (broken && Stopping(stop, backoff.Next())) return;
    if (!broken) backoff.Reset();
  }
}

}  // namespace shmguard::server
