// `shmguard serve`: the admission webhook over HTTPS (TLS >= 1.2, certificate re-read on
// rotation) and a plain-HTTP port for /healthz, /readyz and /metrics. The policy is re-read when
// its file changes; a broken file keeps the last good one.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "io/file_watch.h"
#include "server/cert_reloader.h"
#include "server/decision_log.h"
#include "server/metrics.h"
#include "shmguard/policy.h"
#include "shmguard/result.h"

namespace shmguard::server {

struct ServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 8443;           // HTTPS webhook port; 0 picks a free one (tests)
  int metrics_port = 8080;   // plain HTTP; 0 picks a free one
  std::string cert_file, key_file;
  std::string config_file;   // empty: built-in policy, nothing to reload
  size_t max_body_bytes = 8 << 20;    // Default: 8 MiB (413 above)
  size_t max_connections = 512;       // connections served at once (one thread each)
  int keep_alive_seconds = 10;        // idle time before a keep-alive connection is closed
  size_t keep_alive_max_requests = 1'000'000;  // requests per connection (httplib's default is 5)
  int read_timeout_seconds = 10;
  int write_timeout_seconds = 10;
  std::chrono::milliseconds reload_interval{1000};  // how often cert/config files are checked
  LogFormat log_format = LogFormat::kText;
};

class WebhookServer {
 public:
  // Loads the policy and the certificate pair. Fails (kIo/kInvalidInput, naming the file) when
  // either does not load: a server must not start without them.
  static Result<std::unique_ptr<WebhookServer>> Create(const ServerOptions& options,
                                                       std::shared_ptr<spdlog::logger> log);
  ~WebhookServer();

  // Binds both ports and serves from background threads. Fails with kIo when a port is taken.
  Result<bool> Start();
  // Stops accepting, lets requests in flight finish, joins every thread. Idempotent.
  void Stop();

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::shared_ptr<const Policy> policy() const;

 private:
  WebhookServer(ServerOptions options, std::shared_ptr<spdlog::logger> log, Policy policy,
                std::shared_ptr<const CertPair> cert);
  void Route();
  void HandleAdmissionRoute(const httplib::Request& req, httplib::Response& res, Face face);
  void ReloadConfig();
  void ReloadCertificate();
  bool Ready() const;

  ServerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  mutable std::mutex policy_mu_;
  std::shared_ptr<const Policy> policy_;
  CertReloader certs_;
  Metrics metrics_;
  std::unique_ptr<httplib::SSLServer> https_;
  httplib::Server http_;
  std::thread https_thread_, http_thread_;
  std::unique_ptr<io::FileWatcher> config_watch_, cert_watch_;
  int port_ = 0, metrics_port_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace shmguard::server
