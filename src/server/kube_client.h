// KubeClient: a small Kubernetes API client, as client-go talks to the API server from inside a
// pod — in-cluster configuration (the service account's token, re-read when the kubelet rotates
// it, and CA), a client-side rate limit (client-go's default 5 QPS, burst 10), and list+watch
// with resourceVersion, bookmarks and a relist on 410 Gone, reconnecting with jittered
// exponential backoff (ListWatch). A kubeconfig's token or client certificate, for a CLI run by a
// person (`shmguard top`). JSON in and out (nlohmann); HTTPS through cpp-httplib. Not a general
// client: no exec credential plugins, no protobuf, no HTTP/2.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "shmguard/result.h"

namespace shmguard::server {

struct KubeConfig {
  std::string server;      // https://HOST:PORT
  std::string ca_file;     // PEM bundle that signs the API server's certificate
  std::string token_file;  // the bearer token, re-read whenever its modification time changes
  // From a kubeconfig instead of files: the CA bundle, a fixed bearer token, and a client
  // certificate and its key, as PEM text. Empty: unused.
  std::string ca_pem, token, client_cert_pem, client_key_pem;
  bool insecure = false;  // insecure-skip-tls-verify: the server's certificate is not checked

  // From the pod's environment, as rest.InClusterConfig: KUBERNETES_SERVICE_HOST and _PORT, and
  // /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}. Fails with kIo when they are
  // not there (not in a pod).
  static Result<KubeConfig> InCluster();
  // From the kubeconfig file at `path` (kubectl's), for `context` ("" = its current-context):
  // the cluster's server and CA (certificate-authority[-data], insecure-skip-tls-verify) and the
  // user's token, tokenFile or client certificate (client-certificate[-data], client-key[-data]);
  // files are relative to the kubeconfig's directory. Fails with kIo when the file or a file it
  // names cannot be read, kInvalidInput naming the field when the context, cluster or user is
  // missing or the user has an exec or auth-provider plugin (not supported).
  static Result<KubeConfig> FromKubeconfig(const std::string& path, const std::string& context = "");
  // The namespace of that context ("" when it names none).
  std::string context_namespace;
};

// `flags` as a command's --api-server, --api-ca-file and --api-token-file give them: the pod's
// in-cluster configuration when `server` is empty; else all three must be set (kInvalidInput
// naming the missing flag).
Result<KubeConfig> ResolveApi(const KubeConfig& flags);

// An API response: the HTTP status and the body, as text and parsed as JSON (null when it is not
// JSON: a proxied /metrics).
struct KubeResponse {
  int status = 0;
  std::string text;
  nlohmann::json body;
  bool ok() const { return status >= 200 && status < 300; }
  // The API's Status message (body.message), else "HTTP <status>".
  std::string Message() const;
};

// Jittered exponential backoff: Next() doubles from `initial` up to `max`, each wait drawn
// uniformly from [d/2, d] so that many clients do not retry together; Reset() after a success.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max), next_(initial) {}
  std::chrono::milliseconds Next();
  void Reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_, max_, next_;
  std::mt19937 rng_{std::random_device{}()};
};

// A token bucket, as client-go's flowcontrol: `burst` tokens at first, refilled at `qps` a
// second. Wait() returns at once while a token remains, else sleeps until one is there.
class RateLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  RateLimiter(double qps, int burst, TimePoint start = std::chrono::steady_clock::now());
  void Wait();
  // Takes a token at `now`: how long the caller must wait before using it (0 while tokens
  // remain). Tokens taken ahead are owed, so callers queue in order.
  std::chrono::duration<double> Reserve(TimePoint now);

 private:
  std::mutex mu_;
  double qps_, tokens_, burst_;
  TimePoint last_;
};

class KubeClient {
 public:
  // Defaults: client-go's (5 QPS, burst 10).
  explicit KubeClient(KubeConfig config, double qps = 5, int burst = 10);

  // One request (rate-limited). A transport failure fails with kIo naming the request; an HTTP
  // error is a response (status >= 400), for the caller to read.
  Result<KubeResponse> Request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json");

  // Lists `path` (a collection, e.g. /api/v1/pods?fieldSelector=spec.nodeName%3Dn) and watches it
  // from the list's resourceVersion, until `stop` is set: `on_list` gets every list's items
  // (the first and each relist, which replaces what the caller knew), `on_event` each watch
  // event's type (ADDED, MODIFIED, DELETED) and object. BOOKMARK events only move the
  // resourceVersion on; a 410 Gone (the version is too old) relists; a broken connection
  // re-watches from the last version after a jittered backoff. Watches ask for bookmarks and end
  // after `watch_seconds`, then resume.
  void ListWatch(const std::string& path, const std::function<void(const nlohmann::json& items)>& on_list,
                 const std::function<void(const std::string& type, const nlohmann::json& object)>& on_event,
                 const std::atomic<bool>& stop, int watch_seconds = 300);

  // How many lists ListWatch made (the first and each relist), and watches it opened.
  int lists() const { return lists_; }
  int watches() const { return watches_; }

 private:
  std::string Token();
  // One watch from `version`; returns the last version seen, "" after a 410 Gone, and sets
  // `broken` when the connection failed.
  std::string WatchOnce(const std::string& path, const std::string& version,
                        const std::function<void(const std::string&, const nlohmann::json&)>& on_event,
                        const std::atomic<bool>& stop, int watch_seconds, bool& broken);

  KubeConfig config_;
  std::string host_;
  int port_ = 443;
  RateLimiter limiter_;
  std::mutex token_mu_;
  std::string token_;
  std::chrono::system_clock::time_point token_mtime_{};
  std::atomic<int> lists_{0}, watches_{0};
};

}  // namespace shmguard::server
