// WebhookServer: routes, limits, reloads, start and stop.
#include "server/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <sstream>
#include <thread>

#include "io/config/config.h"
#include "io/words/version.h"
#include "server/admission_handler.h"
#include "server/review_budget.h"

namespace shmguard::server {
namespace {

using Clock = std::chrono::steady_clock;

void WriteError(HttpResponse& res, int status, const std::string& message) {
  res = HttpResponse{};
  res.status = status;
  res.body = ErrorReview(status, message);
}

}  // namespace

TlsSettings EffectiveTls(const ServerOptions& options, const Policy& policy) {
  TlsSettings t;
  if (options.tls_min_version) {
    t.min_version = *options.tls_min_version;
  } else if (policy.tls.min_version) {
    t.min_version = *policy.tls.min_version;
  }
  t.cipher_suites = !options.tls_cipher_suites.empty() ? options.tls_cipher_suites : policy.tls.cipher_suites;
  return t;
}

Result<std::unique_ptr<WebhookServer>> WebhookServer::Create(const ServerOptions& options,
                                                             std::shared_ptr<spdlog::logger> log) {
  Policy policy;
  if (!options.config_file.empty()) {
    auto loaded = io::LoadPolicy(options.config_file, io::Readable::kRegularFiles);
    if (!loaded) return loaded.error();
    policy = std::move(*loaded);
  }
  if (options.cert_file.empty() || options.key_file.empty()) {
    return MakeError(Code::kInvalidInput,
                     "--tls-cert-file and --tls-key-file are required: the webhook serves HTTPS only");
  }
  auto cert = LoadCertPair(options.cert_file, options.key_file);
  if (!cert) return cert.error();
  auto handshakes = HandshakePolicy::Create(EffectiveTls(options, policy), options.client_auth);
  if (!handshakes) return handshakes.error();
  ServerOptions resolved = options;
  if (resolved.max_connections == 0) {
    const auto limit = CgroupMemoryLimit();
    const int threads = options.threads > 0
                            ? options.threads
                            : std::min(8, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
    resolved.max_connections = ConnectionsFor(limit, threads, options.max_body_bytes);
    resolved.max_connections_from =
        limit ? "the memory limit, " + std::to_string(*limit >> 20) + " MiB" : std::string("no memory limit");
  } else {
    resolved.max_connections_from = "--max-connections";
  }
  if (options.observations || options.resource_claims || options.config_maps) {
    auto api = ResolveApi(options.api);
    const char* flag = options.observations      ? "--observations: "
                       : options.resource_claims ? "--resource-claims: "
                                                 : "--config-maps: ";
    if (!api) return MakeError(api.error().code, flag + api.error().message, api.error().where);
    resolved.api = std::move(*api);
  }
  return std::unique_ptr<WebhookServer>(
      new WebhookServer(std::move(resolved), std::move(log), std::move(policy), *cert, std::move(*handshakes)));
}

WebhookServer::WebhookServer(ServerOptions options, std::shared_ptr<spdlog::logger> log, Policy policy,
                             std::shared_ptr<const CertPair> cert, std::unique_ptr<HandshakePolicy> handshakes)
    : options_(std::move(options)),
      log_(std::move(log)),
      policy_(std::make_shared<const Policy>(std::move(policy))),
      certs_(options_.cert_file, options_.key_file, cert),
      handshakes_(std::move(handshakes)) {
  metrics_.SetCertificateNotAfter(cert->not_after);
  ssl_ctx_ = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set_min_proto_version(ssl_ctx_, TLS1_2_VERSION);  // a floor; each handshake may raise it
  SSL_CTX_set_options(ssl_ctx_, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  certs_.Install(ssl_ctx_);        // every handshake takes the current certificate
  handshakes_->Install(ssl_ctx_);  // ... and the current versions, suites and client CAs
  http::HttpsServerOptions h;
  h.bind_address = options_.bind_address;
  h.port = options_.port;
  h.max_body_bytes = options_.max_body_bytes;
  h.max_connections = options_.max_connections;
  h.keep_alive_seconds = options_.keep_alive_seconds;
  h.request_timeout_seconds = options_.request_timeout_seconds;
  h.threads = options_.threads;
  h.on_handshake_failure = [this](SSL* ssl) { OnHandshakeFailure(ssl); };
  h.evict_idle = true;
  h.peer_share = options_.peer_connection_share;
  h.on_evict = [this](std::string_view reason) { OnConnectionClosed(reason); };
  https_ = std::make_unique<HttpsServer>(
      h, ssl_ctx_, [this](const HttpRequest& req, HttpResponse& res) { HandleWebhook(req, res); });
  metrics_http_ =
      std::make_unique<HttpsServer>(http::MetricsPortOptions(options_.bind_address, options_.metrics_port), nullptr,
                                    [this](const HttpRequest& req, HttpResponse& res) { HandleMetricsPort(req, res); });
  if (options_.observations)
    profiles_ = std::make_unique<ProfileWatch>(std::make_shared<kube::KubeClient>(options_.api));
  if (options_.resource_claims)
    claims_ = std::make_unique<ClaimWatch>(std::make_shared<kube::KubeClient>(options_.api));
  if (options_.config_maps) {
    config_maps_ = std::make_unique<ConfigMapWatch>(std::make_shared<kube::KubeClient>(options_.api),
                                                    options_.config_map_selector);
  }
}

WebhookServer::~WebhookServer() {
  Stop();
  https_.reset();
  SSL_CTX_free(ssl_ctx_);
}

std::shared_ptr<const Policy> WebhookServer::policy() const {
  std::lock_guard<std::mutex> lock(policy_mu_);
  return policy_;
}

std::string WebhookServer::NotReadyReason() const {
  auto cert = certs_.Current();
  auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  if (!cert) return "no serving certificate loaded";
  if (cert->not_after <= now.count()) return "the serving certificate has expired";
  std::lock_guard<std::mutex> lock(cert_error_mu_);
  if (!cert_error_.empty()) {
    return "the certificate files do not load (" + cert_error_ + "); still serving the previous certificate";
  }
  if (profiles_) {
    if (std::string reason = profiles_->NotReadyReason(); !reason.empty()) return reason;
  }
  if (claims_) {
    if (std::string reason = claims_->NotReadyReason(); !reason.empty()) return reason;
  }
  if (config_maps_) return config_maps_->NotReadyReason();
  return {};
}

// Every answer of the webhook port, errors included, is an AdmissionReview (ErrorReview); the
// one exception handler of the request path is here.
void WebhookServer::HandleWebhook(const HttpRequest& req, HttpResponse& res) {
  try {
    // Route on the path: the API server's "?timeout=10s" is a query parameter.
    if (auto route = MatchAdmissionRoute(req.path, req.target)) {
      if (req.method != "POST") {
        WriteError(res, 405, "use POST with an admission.k8s.io/v1 AdmissionReview");
        res.headers.emplace_back("Allow", "POST");
        metrics_.CountHttpError(405);
        return;
      }
      return HandleAdmissionRoute(req, res, *route);
    }
    if (req.path == "/healthz" && req.method == "GET") {
      res.content_type = "text/plain";
      res.body = "ok\n";
      return;
    }
    metrics_.CountHttpError(404);
    WriteError(res, 404, "not found: the webhook serves POST /mutate and POST /validate");
  } catch (const std::exception& e) {  // a bug: answer 500, count it, log it, keep serving
    metrics_.CountHttpError(500);
    WriteError(res, 500, std::string("internal error: ") + e.what());
    LogEvent(*log_, options_.log_format, spdlog::level::err, "internal error",
             {{"path", req.path}, {"error", e.what()}});
  }
}

void WebhookServer::HandleAdmissionRoute(const HttpRequest& req, HttpResponse& res, const AdmissionRoute& route) {
  auto start = Clock::now();
  const std::string endpoint = route.face == Face::kMutate ? "mutate" : "validate";
  auto policy = this->policy();
  auto observations = profiles_ ? profiles_->Snapshot() : nullptr;
  auto claims = claims_ ? claims_->Snapshot() : nullptr;
  auto config_maps = config_maps_ ? config_maps_->Snapshot() : nullptr;
  const ReviewBudget budget =
      options_.review_cpu_budget.count() > 0 ? ReviewBudget(options_.review_cpu_budget) : ReviewBudget::None();
  std::optional<AdmissionExchange> refused = CheckAdmissionRequest(route, req.content_type, req.body);
  AdmissionExchange x = refused
                            ? std::move(*refused)
                            : HandleAdmission({req.body, req.body_padded}, route,
                                              {*policy, observations.get(), claims.get(), &budget, config_maps.get()});
  res.status = x.status;
  res.body = std::move(x.body);
  auto latency = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  metrics_.ObserveRequest(endpoint, x.kind, OutcomeName(x.outcome), static_cast<double>(latency.count()) / 1e6);
  if (x.outcome == Outcome::kPatched) metrics_.CountPatch();
  if (x.outcome == Outcome::kDenied) metrics_.CountDenial();
  if (x.status != 200) metrics_.CountHttpError(x.status);
  LogDecision(*log_, options_.log_format, endpoint, x, latency.count());
}

void WebhookServer::HandleMetricsPort(const HttpRequest& req, HttpResponse& res) {
  ServeMetricsPort(req, res, req.path == "/readyz" ? NotReadyReason() : std::string(),
                   [this] { return metrics_.Render(io::Version()) + RenderProfileMetrics(); });
}

std::string WebhookServer::RenderProfileMetrics() const {
  if (!profiles_) return {};
  std::ostringstream out;
  http::PrometheusHeader(out, "shmguard_observations_synced", "gauge",
                         "1 once the ShmProfiles are listed (sizes are learned from them), else 0.");
  out << "shmguard_observations_synced " << (profiles_->synced() ? 1 : 0) << "\n";
  http::PrometheusHeader(out, "shmguard_observations_profiles", "gauge", "ShmProfiles the webhook sizes from.");
  out << "shmguard_observations_profiles " << profiles_->Snapshot()->size() << "\n";
  http::PrometheusHeader(out, "shmguard_observations_unreadable_total", "counter",
                         "ShmProfiles skipped because a field has the wrong type.");
  out << "shmguard_observations_unreadable_total " << profiles_->unreadable() << "\n";
  http::PrometheusHeader(out, "shmguard_observations_lists_total", "counter",
                         "Lists of the ShmProfiles (the first and each relist).");
  out << "shmguard_observations_lists_total " << profiles_->stats().lists << "\n";
  http::PrometheusHeader(out, "shmguard_observations_watches_total", "counter", "Watches of the ShmProfiles opened.");
  out << "shmguard_observations_watches_total " << profiles_->stats().watches << "\n";
  return out.str();
}

std::function<void()> WebhookServer::Guarded(const char* what, std::function<void()> reload) {
  return [this, what, reload = std::move(reload)] {
    try {
      reload();
    } catch (const std::exception& e) {
      LogEvent(*log_, options_.log_format, spdlog::level::err, std::string(what) + " reload failed; keeping the last",
               {{"error", e.what()}});
    }
  };
}

void WebhookServer::ReloadConfig() {
  // A regular file only, opened without waiting: what the path became (a FIFO, a link to
  // /dev/zero) is an error of this reload, never a thread stuck in open() or read().
  auto loaded = io::LoadPolicy(options_.config_file, io::Readable::kRegularFiles);
  if (loaded) {  // the file's tls: section, merged with the flags, must make a usable setting
    if (auto set = handshakes_->SetTls(EffectiveTls(options_, *loaded)); !set) {
      loaded = MakeError(Code::kInvalidInput, "tls: " + set.error().message, Location::File(options_.config_file));
    }
  }
  metrics_.CountConfigReload(loaded.has_value());
  if (!loaded) {
    LogEvent(*log_, options_.log_format, spdlog::level::err, "config reload failed; keeping the last good policy",
             {{"error", loaded.error().ToString()}});
    return;
  }
  {
    std::lock_guard<std::mutex> lock(policy_mu_);
    policy_ = std::make_shared<const Policy>(std::move(*loaded));
  }
  LogEvent(*log_, options_.log_format, spdlog::level::info, "config reloaded", {{"file", options_.config_file}});
}

void WebhookServer::ReloadCertificate() {
  auto pair = certs_.Reload();
  metrics_.CountCertReload(pair.has_value());
  {
    std::lock_guard<std::mutex> lock(cert_error_mu_);
    cert_error_ = pair ? std::string() : pair.error().ToString();
  }
  if (!pair) {
    LogEvent(*log_, options_.log_format, spdlog::level::err,
             "certificate reload failed; serving the previous certificate", {{"error", pair.error().ToString()}});
    return;
  }
  metrics_.SetCertificateNotAfter((*pair)->not_after);
  LogEvent(*log_, options_.log_format, spdlog::level::info, "certificate reloaded",
           {{"subject", (*pair)->subject}, {"not_after", (*pair)->not_after}});
}

void WebhookServer::ReloadClientCa() {
  auto reloaded = handshakes_->ReloadClientCa();
  metrics_.CountClientCaReload(reloaded.has_value());
  if (!reloaded) {
    LogEvent(*log_, options_.log_format, spdlog::level::err, "client CA reload failed; keeping the previous CAs",
             {{"error", reloaded.error().ToString()}});
    return;
  }
  LogEvent(*log_, options_.log_format, spdlog::level::info, "client CA reloaded",
           {{"file", options_.client_auth.ca_file}});
}

std::optional<uint64_t> WebhookServer::LogThrottle::Admit() {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
  int64_t last = last_ms.load();
  if (now - last < 1000 || !last_ms.compare_exchange_strong(last, now)) {
    skipped++;
    return std::nullopt;
  }
  return skipped.exchange(0);
}

void WebhookServer::OnHandshakeFailure(SSL* ssl) {
  const std::string reason = HandshakePolicy::FailureReason(ssl);
  metrics_.CountHandshakeFailure(reason);
  const std::optional<uint64_t> unlogged = refusal_log_.Admit();
  if (!unlogged) return;
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  char host[INET6_ADDRSTRLEN] = "?";
  if (getpeername(SSL_get_fd(ssl), reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
    const void* addr = peer.ss_family == AF_INET6
                           ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr)
                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&peer)->sin_addr);
    inet_ntop(peer.ss_family, addr, host, sizeof host);
  }
  LogEvent(*log_, options_.log_format, spdlog::level::warn, "TLS handshake refused",
           {{"reason", reason},
            {"detail", HandshakePolicy::FailureDetail(ssl)},
            {"client", host},
            {"refused_since_last_line", *unlogged}});
}

void WebhookServer::OnConnectionClosed(std::string_view reason) {
  metrics_.CountConnectionClosed(reason);
  const std::optional<uint64_t> unlogged = close_log_.Admit();
  if (!unlogged) return;
  LogEvent(*log_, options_.log_format, spdlog::level::warn, "webhook connections full: one closed to let another in",
           {{"reason", std::string(reason)},
            {"max_connections", static_cast<int64_t>(options_.max_connections)},
            {"closed_since_last_line", *unlogged}});
}

Result<bool> WebhookServer::Start() {
  if (!ssl_ctx_) return MakeError(Code::kInternal, "TLS context could not be created");
  auto p = https_->Listen();
  if (!p) return p.error();
  auto m = metrics_http_->Listen();
  if (!m) return MakeError(Code::kIo, m.error().message + " (metrics port)", m.error().where);
  port_ = *p;
  metrics_port_ = *m;
  https_->Start();
  metrics_http_->Start();
  if (profiles_) profiles_->Start();
  if (claims_) claims_->Start();
  if (config_maps_) config_maps_->Start();
  if (!options_.config_file.empty()) {
    config_watch_ =
        std::make_unique<io::FileWatcher>(std::vector<std::string>{options_.config_file}, options_.reload_interval,
                                          Guarded("config", [this] { ReloadConfig(); }));
  }
  cert_watch_ = std::make_unique<io::FileWatcher>(std::vector<std::string>{options_.cert_file, options_.key_file},
                                                  options_.reload_interval,
                                                  Guarded("certificate", [this] { ReloadCertificate(); }));
  if (handshakes_->requires_client_cert()) {
    client_ca_watch_ =
        std::make_unique<io::FileWatcher>(std::vector<std::string>{options_.client_auth.ca_file},
                                          options_.reload_interval, Guarded("client CA", [this] { ReloadClientCa(); }));
  }
  const TlsSettings tls = handshakes_->tls();
  std::string clients;
  for (const auto& n : handshakes_->client_auth().names) clients += (clients.empty() ? "" : ",") + n;
  LogEvent(*log_, options_.log_format, spdlog::level::info, "serving",
           {{"webhook", "https://" + options_.bind_address + ":" + std::to_string(port_)},
            {"metrics", "http://" + options_.bind_address + ":" + std::to_string(metrics_port_)},
            {"max_connections", static_cast<int64_t>(options_.max_connections)},
            {"max_connections_from", options_.max_connections_from},
            {"config", options_.config_file.empty() ? "built-in defaults" : options_.config_file},
            {"certificate", certs_.Current()->subject},
            {"tls_min_version", TlsVersionName(tls.min_version)},
            {"client_auth", handshakes_->requires_client_cert() ? options_.client_auth.ca_file + " (" + clients + ")"
                                                                : std::string("off")},
            {"observations", profiles_ ? options_.api.server + kShmProfilesPath : std::string("off")},
            {"resource_claims", claims_ ? options_.api.server + "/apis/resource.k8s.io/v1" : std::string("off")},
            {"config_maps", config_maps_ ? options_.api.server + kConfigMapsPath : std::string("off")}});
  return true;
}

void WebhookServer::Stop() {
  if (stopped_.exchange(true)) return;
  config_watch_.reset();
  cert_watch_.reset();
  client_ca_watch_.reset();
  if (profiles_) profiles_->Stop();
  if (claims_) claims_->Stop();
  if (config_maps_) config_maps_->Stop();
  https_->Stop();  // refuses new connections, answers requests in flight, joins
  metrics_http_->Stop();
  log_->flush();
}

}  // namespace shmguard::server
