// KubeClient: requests to the API server as client-go makes them — rate-limited (RateLimiter)
// whatever they are (lists, watches, writes), over TLS connections kept alive and reused, with
// the CA bundle parsed once and again only when its file changes (the kubelet rotates it), and
// the bearer token re-read when its file changes. A request's answer is read up to a limit of
// bytes, and may be given a deadline for the whole of it. Streams (a watch's lines) are read as
// they come and can be cancelled from another thread, closing their connection. JSON in and out
// (nlohmann); HTTPS through cpp-httplib. Not a general client: no protobuf, no HTTP/2.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/result.h"
#include "kube/bounded_json.h"
#include "kube/kube_config.h"
#include "kube/rate_limit.h"

namespace httplib {
class SSLClient;
struct Request;
}  // namespace httplib

namespace shmguard::kube {

// An API response: the HTTP status and the body, as text and parsed as JSON (null when it is not
// JSON: a proxied /metrics).
struct KubeResponse {
  int status = 0;
  std::string text;
  nlohmann::json body;
  std::string retry_after;  // the Retry-After header, with 429 and 503
  bool ok() const { return status >= 200 && status < 300; }
  // The API's Status message (body.message), else "HTTP <status>".
  std::string Message() const;
};

struct RequestOptions {
  // An answer larger than this is an error (kInvalidInput), and no more of it is read. Default:
  // 64 MiB.
  size_t max_body_bytes = size_t{64} << 20;
  // The whole request, from its rate limit to the answer's last byte; past it the connection is
  // closed and the request fails with kIo. 0: none beyond the 30 s allowed between two reads.
  std::chrono::milliseconds deadline{0};
  // Cancelling it closes the connection of the request in flight (which fails with kIo), as it
  // does a stream's. Default: none.
  class StreamCancel* cancel = nullptr;
  // An answer of more JSON values than this is an error (kInvalidInput), and is not parsed
  // further. Default: 1,000,000 (about 64 MB parsed).
  size_t max_values = 1'000'000;
};

// Cancels a stream (a watch), or a request, from another thread: Cancel() closes the connection
// it reads, if any, and any started with the token after it ends at once.
class StreamCancel {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_; }
  const std::atomic<bool>& flag() const { return cancelled_; }

 private:
  friend class KubeClient;
  std::mutex mu_;
  httplib::SSLClient* active_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

// How a stream ended: its HTTP status (0 when no answer came), the Retry-After it carried, and
// the transport's error ("" when the server ended it or the reader stopped).
struct StreamEnd {
  int status = 0;
  std::string retry_after;
  std::string error;
};

// `value` for a URL's path segment or query value: every byte but [A-Za-z0-9-_.~] as %XX
// (RFC 3986): a continue token's '+', '/' and '=', a label selector's ',' and '='.
std::string QueryValue(std::string_view value);

class KubeClient {
 public:
  // Defaults: client-go's (5 QPS, burst 10).
  explicit KubeClient(KubeConfig config, double qps = 5, int burst = 10);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // One request. A transport failure or the deadline fails with kIo naming the request, an
  // answer past `options.max_body_bytes` or `options.max_values` with kInvalidInput; an HTTP
  // error is a response (status >= 400), for the caller to read.
  Result<KubeResponse> Request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json", RequestOptions options = {});

  // A GET whose answer is read a line at a time (a watch): `on_line` gets each line of a 200
  // answer as it arrives, until it returns false, the server ends the answer, `cancel` is
  // cancelled, or nothing arrives for `silence` (the connection is then dropped). The body of
  // any other status is not read.
  // A line longer than `max_line_bytes` ends the stream with an error: no more of it is kept.
  StreamEnd Stream(const std::string& path, const std::function<bool(std::string_view line)>& on_line,
                   std::chrono::seconds silence, StreamCancel& cancel, size_t max_line_bytes = size_t{64} << 20);

  // Requests and streams made, TLS connections opened (a reused one is not counted again).
  uint64_t requests() const { return requests_; }
  uint64_t connections() const { return connections_; }
  const KubeConfig& config() const { return config_; }

 private:
  struct Pool;
  std::string Token();
  // A connection from the pool (kIdle: the newest kept, if the CA has not changed since and it
  // has been idle less than 45 s; `reused` says whether it was) or a new one (kNew).
  enum class Reuse { kIdle, kNew };
  std::unique_ptr<httplib::SSLClient> Connection(std::chrono::seconds read_timeout, Reuse reuse, bool* reused);
  struct Attempt;
  Attempt Send(httplib::SSLClient& client, const httplib::Request& req, const RequestOptions& options,
               std::chrono::steady_clock::time_point start);
  void Return(std::unique_ptr<httplib::SSLClient> client);

  KubeConfig config_;
  RateLimiter limiter_;
  std::unique_ptr<Pool> pool_;
  std::mutex token_mu_;
  std::string token_;
  std::chrono::system_clock::time_point token_mtime_{};
  std::atomic<uint64_t> requests_{0}, connections_{0};
};

}  // namespace shmguard::kube
