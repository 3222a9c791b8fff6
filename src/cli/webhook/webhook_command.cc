// RunWebhook: signal mask, server start, sigwait, graceful stop.
#include "cli/webhook/webhook_command.h"

#include <csignal>
#include <iostream>

#include "cli/program/api_flags.h"

namespace shmguard::cli {

void AddWebhookFlags(CLI::App& app, server::ServerOptions& o, std::string& log_format) {
  app.add_option("--config", o.config_file, "policy YAML, re-read when it changes; built-in defaults without it");
  app.add_option("--tls-cert-file", o.cert_file, "PEM certificate chain, re-read when it changes")->required();
  app.add_option("--tls-key-file", o.key_file, "PEM private key, re-read when it changes")->required();
  app.add_option("--port", o.port, "HTTPS webhook port (POST /mutate, /validate)")->capture_default_str();
  app.add_option("--metrics-port", o.metrics_port, "plain HTTP port for /healthz, /readyz, /metrics")
      ->capture_default_str();
  app.add_option("--bind-address", o.bind_address, "address both ports listen on")->capture_default_str();
  app.add_option("--log-format", log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--max-body-bytes", o.max_body_bytes, "largest request body; larger ones get 413")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "open webhook connections; at the cap the busiest peer's quietest connection is closed for a "
                 "new one (0: as many as fit in the cgroup's memory limit, at most 10000)")
      ->capture_default_str();
  app.add_option("--peer-connection-share", o.peer_connection_share,
                 "the share of --max-connections one peer address may hold; at it, its own quietest "
                 "connection is closed for a new one")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--keep-alive-seconds", o.keep_alive_seconds,
                 "idle seconds before a connection is closed; above the 90 s kube-apiserver keeps an idle "
                 "connection, so that it closes first")
      ->capture_default_str()
      ->check([](const std::string& v) -> std::string {
        constexpr int kMost = 24 * 3600;
        int seconds = 0;
        if (!CLI::detail::lexical_cast(v, seconds) || seconds <= server::kApiServerIdleSeconds || seconds > kMost) {
          return "must be above " + std::to_string(server::kApiServerIdleSeconds) +
                 " (the seconds kube-apiserver keeps an idle connection to a webhook: one closed sooner may be "
                 "closed as a review is sent on it, which the API server does not resend, and the pod is "
                 "admitted unpatched) and at most " +
                 std::to_string(kMost);
        }
        return {};
      });
  app.add_option("--request-timeout-seconds", o.request_timeout_seconds,
                 "a TLS handshake or a started request must complete within this")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "event loops serving the webhook port (0: one per available CPU, max 8)")
      ->capture_default_str();
  app.add_option_function<int>(
         "--review-cpu-budget-ms", [&o](int ms) { o.review_cpu_budget = std::chrono::milliseconds(ms); },
         "CPU time one review may take; past it the review is answered review-over-budget (0: no bound; "
         "default 1000)")
      ->check(CLI::Range(0, 60000));
  app.add_option_function<std::string>(
         "--tls-min-version", [&o](const std::string& v) { o.tls_min_version = *ParseTlsVersion(v); },
         "lowest TLS version of the webhook port: VersionTLS12 or VersionTLS13 (default; or the config's "
         "tls.minVersion)")
      ->check([](const std::string& v) {
        auto parsed = ParseTlsVersion(v);
        return parsed ? std::string() : parsed.error().message;
      });
  app.add_option("--tls-cipher-suites", o.tls_cipher_suites,
                 "comma-separated IANA cipher suites for TLS 1.2 (default: the ECDHE AES-GCM and "
                 "ChaCha20-Poly1305 suites; or the config's tls.cipherSuites)")
      ->delimiter(',')
      ->check([](const std::string& name) {
        auto parsed = ParseCipherSuites({name}, false);
        return parsed ? std::string() : parsed.error().message;
      });
  app.add_option("--client-ca-file", o.client_auth.ca_file,
                 "require a client certificate signed by a CA in this PEM file (mutual TLS with the API "
                 "server); re-read when it changes");
  app.add_option("--client-cn", o.client_auth.names,
                 "a client certificate name (subject CN or DNS SAN) to accept; repeatable; default "
                 "kube-apiserver when --client-ca-file is given")
      ->delimiter(',');
  int reload_ms = static_cast<int>(o.reload_interval.count());
  app.add_option_function<int>(
         "--reload-interval-ms", [&o](int ms) { o.reload_interval = std::chrono::milliseconds(ms); },
         "how often certificate and config files are checked for changes")
      ->default_val(reload_ms)
      ->check(CLI::Range(10, 600000));
  app.add_flag("--observations", o.observations,
               "size from the ShmProfiles the node agents record (list+watch of shmprofiles.shmguard.io)");
  app.add_flag("--resource-claims", o.resource_claims,
               "count GPUs pods get through Dynamic Resource Allocation (list+watch of resourceclaims and "
               "resourceclaimtemplates.resource.k8s.io)");
  app.add_flag("--config-maps", o.config_maps,
               "read a server's --config file and envFrom variables from the ConfigMaps that hold them "
               "(list+watch of configmaps; values up to 4 KiB and YAML files up to 64 KiB are kept)");
  app.add_option("--config-map-selector", o.config_map_selector,
                 "with --config-maps: watch only the ConfigMaps this label selector matches");
  AddApiFlags(&app, o.api);
}

ExitCode RunWebhook(server::ServerOptions options, const std::string& log_format) {
  options.log_format = log_format == "json" ? server::LogFormat::kJson : server::LogFormat::kText;
  auto log = server::MakeLogger(options.log_format);

  // Every thread inherits this mask, so only sigwait below sees SIGTERM/SIGINT.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client closing mid-write must not kill the server

  auto srv = server::WebhookServer::Create(options, log);
  if (!srv) {
    server::LogEvent(*log, options.log_format, spdlog::level::critical, "cannot start",
                     {{"error", srv.error().ToString()}});
    log->flush();
    return ExitCode::kUsage;
  }
  auto started = (*srv)->Start();
  if (!started) {
    server::LogEvent(*log, options.log_format, spdlog::level::critical, "cannot start",
                     {{"error", started.error().ToString()}});
    log->flush();
    return ExitCode::kUsage;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  server::LogEvent(*log, options.log_format, spdlog::level::info, "stopping: finishing requests in flight",
                   {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  (*srv)->Stop();
  server::LogEvent(*log, options.log_format, spdlog::level::info, "stopped");
  log->flush();
  return ExitCode::kOk;
}

}  // namespace shmguard::cli
