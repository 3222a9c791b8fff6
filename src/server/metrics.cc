// Metrics: counters, a latency histogram, and their Prometheus text rendering.
#include "server/metrics.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "core/workloads/pod_templates.h"

namespace shmguard::server {

using http::PrometheusHeader;
using http::PrometheusLabel;

namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

const std::string& KindLabel(const std::string& kind) {
  // The kinds of the table of kinds, each name once: a request's kind is whatever its sender
  // wrote, and every distinct label value would be a series kept for as long as the process.
  static const std::set<std::string, std::less<>> known = [] {
    std::set<std::string, std::less<>> names;
    for (const KindInfo& k : KnownKinds()) {
      if (!k.kind.empty() && !k.resource.empty()) names.emplace(k.kind);
    }
    return names;
  }();
  static const std::string other = "other", none = "";
  if (kind.empty()) return none;
  auto it = known.find(kind);
  return it != known.end() ? *it : other;
}

void Metrics::ObserveRequest(const std::string& endpoint, const std::string& kind, const std::string& decision,
                             double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, KindLabel(kind), decision}];
  Histogram& h = latency_[endpoint];
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
}

void Metrics::CountHttpError(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_errors_[status];
}

std::string Metrics::Render(const std::string& version) const {
  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mu_);
  PrometheusHeader(out, "shmguard_admission_requests_total", "counter",
                   "Admission requests by endpoint, object kind and decision.");
  for (const auto& [key, n] : requests_) {
    const auto& [endpoint, kind, decision] = key;
    out << "shmguard_admission_requests_total{endpoint=\"" << PrometheusLabel(endpoint) << "\",kind=\""
        << PrometheusLabel(kind) << "\",decision=\"" << PrometheusLabel(decision) << "\"} " << n << "\n";
  }
  PrometheusHeader(out, "shmguard_admission_duration_seconds", "histogram",
                   "Time from request body to response, by endpoint.");
  for (const auto& [endpoint, h] : latency_) {
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      out << "shmguard_admission_duration_seconds_bucket{endpoint=\"" << PrometheusLabel(endpoint) << "\",le=\""
          << Number(kLatencyBuckets[i]) << "\"} " << h.buckets[i] << "\n";
    }
    out << "shmguard_admission_duration_seconds_bucket{endpoint=\"" << PrometheusLabel(endpoint) << "\",le=\"+Inf\"} "
        << h.count << "\n";
    out << "shmguard_admission_duration_seconds_sum{endpoint=\"" << PrometheusLabel(endpoint) << "\"} " << Number(h.sum)
        << "\n";
    out << "shmguard_admission_duration_seconds_count{endpoint=\"" << PrometheusLabel(endpoint) << "\"} " << h.count
        << "\n";
  }
  http::WriteSample(out, "shmguard_patches_total", "counter", "Mutations answered with a JSON patch.", patches_);
  http::WriteSample(out, "shmguard_denials_total", "counter", "Validations answered allowed=false.", denials_);
  PrometheusHeader(out, "shmguard_http_errors_total", "counter",
                   "Requests answered with an HTTP error status (bad input 4xx, internal 5xx).");
  for (const auto& [code, n] : http_errors_) {
    out << "shmguard_http_errors_total{code=\"" << code << "\"} " << n << "\n";
  }
  http::WriteCounterBy(out, "shmguard_config_reloads_total", "Policy reloads by result.", "result",
                       {{"ok", config_reloads_ok_}, {"failed", config_reloads_failed_}});
  http::WriteCounterBy(out, "shmguard_certificate_reloads_total", "Serving certificate reloads by result.", "result",
                       {{"ok", cert_reloads_ok_}, {"failed", cert_reloads_failed_}});
  http::WriteCounterBy(out, "shmguard_client_ca_reloads_total", "Client CA file reloads (mutual TLS) by result.",
                       "result", {{"ok", client_ca_reloads_ok_}, {"failed", client_ca_reloads_failed_}});
  http::WriteCounterBy(out, "shmguard_tls_handshake_failures_total",
                       "Refused TLS handshakes on the webhook port: client_cert (missing, untrusted, expired or "
                       "another client's certificate) or tls (protocol version, cipher suite, not TLS).",
                       "reason", {{"client_cert", handshake_client_cert_}, {"tls", handshake_tls_}});
  http::WriteCounterBy(out, "shmguard_webhook_connections_closed_total",
                       "Webhook connections closed to let a new one in: cap (the server was at --max-connections; "
                       "the busiest peer's quietest went) or peer_share (its peer held its share), and new "
                       "connections refused (refused: nothing could be closed).",
                       "reason", {{"cap", closed_cap_}, {"peer_share", closed_peer_share_}, {"refused", refused_}});
  PrometheusHeader(out, "shmguard_certificate_not_after_seconds", "gauge",
                   "Expiry of the serving certificate in use, seconds since the Unix epoch.");
  out << "shmguard_certificate_not_after_seconds " << cert_not_after_.load() << "\n";
  http::WriteBuildInfo(out, version);
  return out.str();
}

}  // namespace shmguard::server
