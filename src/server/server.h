// `shmguard-webhook`: the admission webhook over HTTPS (TLS 1.3 by default, optionally mutual TLS
// with the API server; certificate and client CA re-read on rotation; transport in
// https_server.h) and a plain-HTTP port for /healthz, /readyz and /metrics on the same
// transport. The policy is re-read when its file changes; a broken file keeps the last good one.
#pragma once

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/policy/policy.h"
#include "core/values/result.h"
#include "http/https_server.h"
#include "io/files/file_watch.h"
#include "server/admission_handler.h"
#include "server/cert_reloader.h"
#include "server/claim_watch.h"
#include "server/config_map_watch.h"
#include "server/connection_budget.h"
#include "server/decision_log.h"
#include "server/handshake_policy.h"
#include "server/metrics.h"
#include "server/profile_watch.h"

namespace shmguard::server {

using http::HttpRequest;
using http::HttpResponse;
using http::HttpsServer;
using kube::KubeConfig;

// How long kube-apiserver keeps an idle connection to a webhook: client-go's transport
// (client-go v0.37.2 transport/cache.go:147) leaves IdleConnTimeout unset, so apimachinery's
// SetOldTransportDefaults (pkg/util/net/http.go:123) takes net/http's DefaultTransport's, 90 s
// (Go 1.26 net/http/transport.go:54). A webhook that closes an idle connection sooner races a
// review the API server is sending on it: the write meets a reset, and the admission webhook
// client does not resend a POST (client-go rest/request.go:1070), so with failurePolicy: Ignore
// the pod is admitted unpatched.
inline constexpr int kApiServerIdleSeconds = 90;

struct ServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 8443;          // HTTPS webhook port; 0 picks a free one (tests)
  int metrics_port = 8080;  // plain HTTP; 0 picks a free one
  std::string cert_file, key_file;
  std::string config_file;          // empty: built-in policy, nothing to reload
  size_t max_body_bytes = 8 << 20;  // Default: 8 MiB (413 above)
  // Open webhook connections; at the cap the busiest peer's quietest is closed for a new one.
  // 0: as many as fit in the cgroup's memory limit (connection_budget.h), said in the log.
  size_t max_connections = 0;
  // The share of max_connections one peer address may hold (HttpsServerOptions::peer_share).
  double peer_connection_share = 0.5;
  std::string max_connections_from;  // set by Create: "--max-connections", "the memory limit, 128 MiB"
  // Idle time before a keep-alive connection is closed: longer than kube-apiserver keeps one
  // (kApiServerIdleSeconds), so that the API server always closes it first.
  int keep_alive_seconds = 120;
  int request_timeout_seconds = 10;  // a handshake or a started request must finish in this
  int threads = 0;                   // event loops; 0 = CPUs available (max 8)
  // The CPU time one review may take (review_budget.h); past it, it is answered with
  // review-over-budget. 0: no bound. Default: 1 s (a review takes well under a millisecond).
  std::chrono::milliseconds review_cpu_budget{1000};
  std::chrono::milliseconds reload_interval{1000};  // how often cert/config files are checked
  LogFormat log_format = LogFormat::kText;
  // The webhook port's TLS (--tls-min-version, --tls-cipher-suites): set here, they win over the
  // config file's tls: section; set in neither: TLS 1.3 and the default suites.
  std::optional<TlsVersion> tls_min_version;
  std::vector<std::string> tls_cipher_suites;
  ClientAuth client_auth;  // --client-ca-file, --client-cn: mutual TLS when ca_file is set
  // --observations: size from the ShmProfiles in the cluster (ProfileWatch), read through `api`
  // (in-cluster when api.server is empty). Off: sized from the formula alone, no API access.
  bool observations = false;
  // --resource-claims: count the GPUs pods get through Dynamic Resource Allocation, from the
  // ResourceClaims and ResourceClaimTemplates in the cluster (ClaimWatch), read through `api`.
  bool resource_claims = false;
  // --config-maps: read the ConfigMaps a server's launch takes its --config file and envFrom
  // variables from (list+watch of configmaps, only those matching --config-map-selector, a
  // label selector, when given); what is kept of each is bounded (io/config_map.h).
  bool config_maps = false;
  std::string config_map_selector;
  KubeConfig api;
};

// The TLS settings in force: the options' where set, else the policy's, else the defaults.
TlsSettings EffectiveTls(const ServerOptions& options, const Policy& policy);

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
  const ProfileWatch* profiles() const { return profiles_.get(); }

 private:
  WebhookServer(ServerOptions options, std::shared_ptr<spdlog::logger> log, Policy policy,
                std::shared_ptr<const CertPair> cert, std::unique_ptr<HandshakePolicy> handshakes);
  void HandleMetricsPort(const HttpRequest& req, HttpResponse& res);
  void HandleWebhook(const HttpRequest& req, HttpResponse& res);
  void HandleAdmissionRoute(const HttpRequest& req, HttpResponse& res, const AdmissionRoute& route);
  void ReloadConfig();
  // `reload` for a FileWatcher's thread: an exception it throws (std::bad_alloc) is logged as a
  // failed reload of `what` and the last good state stays, instead of ending the process.
  std::function<void()> Guarded(const char* what, std::function<void()> reload);
  std::string RenderProfileMetrics() const;  // the observation metrics, with --observations
  void ReloadCertificate();
  void ReloadClientCa();
  // Counts a refused handshake and logs it, at most one line a second (a client retrying in a
  // loop must not flood the log); the line says how many refusals it stands for.
  void OnHandshakeFailure(SSL* ssl);
  void OnConnectionClosed(std::string_view reason);
  // Empty when ready; otherwise why not (no valid certificate, or its files fail to load).
  std::string NotReadyReason() const;

  ServerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  mutable std::mutex policy_mu_;
  std::shared_ptr<const Policy> policy_;
  CertReloader certs_;
  std::unique_ptr<HandshakePolicy> handshakes_;
  Metrics metrics_;
  SSL_CTX* ssl_ctx_ = nullptr;
  std::unique_ptr<HttpsServer> https_;
  std::unique_ptr<HttpsServer> metrics_http_;  // plain HTTP: probes and metrics
  std::unique_ptr<io::FileWatcher> config_watch_, cert_watch_, client_ca_watch_;
  std::unique_ptr<ProfileWatch> profiles_;       // with --observations
  std::unique_ptr<ClaimWatch> claims_;           // with --resource-claims
  std::unique_ptr<ConfigMapWatch> config_maps_;  // with --config-maps
  // A line logged at most once a second, from any loop thread: Admit gives how many were not
  // logged since the last line, or nullopt when this one is not logged either.
  struct LogThrottle {
    std::atomic<int64_t> last_ms{0};
    std::atomic<uint64_t> skipped{0};
    std::optional<uint64_t> Admit();
  };
  LogThrottle refusal_log_;  // refused TLS handshakes (OnHandshakeFailure)
  LogThrottle close_log_;    // connections closed to make room (OnConnectionClosed)
  int port_ = 0, metrics_port_ = 0;
  std::atomic<bool> stopped_{false};
  mutable std::mutex cert_error_mu_;
  std::string cert_error_;  // why the last certificate reload failed; empty when it worked
};

}  // namespace shmguard::server
