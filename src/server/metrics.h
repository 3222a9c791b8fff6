// The server's Prometheus metrics and their text exposition format (version 0.0.4), written by
// hand: Debian has no Prometheus client library for C++. Thread-safe; cheap on the hot path.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>

#include "http/prometheus_text.h"

namespace shmguard::server {

// The kind label of an admission request: the kind's name when the table of kinds has it
// (KnownKinds), "" when the request had none, else "other" — so that however many kinds callers
// send, the requests counter has at most (kinds + 2) × endpoints × decisions series.
const std::string& KindLabel(const std::string& kind);

class Metrics {
 public:
  // Upper bounds of the latency histogram, in seconds.
  static constexpr std::array<double, 12> kLatencyBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                             0.01,   0.025,   0.05,   0.1,   0.5,    1.0};

  // One admission request: endpoint "mutate"/"validate", kind "Pod"/"JobSet"/"" (counted under
  // KindLabel) and decision "allowed", "patched", "denied", or "error" (HTTP 4xx/5xx).
  void ObserveRequest(const std::string& endpoint, const std::string& kind, const std::string& decision,
                      double seconds);
  void CountPatch() { patches_++; }
  void CountDenial() { denials_++; }
  void CountHttpError(int status);
  void CountConfigReload(bool ok) { (ok ? config_reloads_ok_ : config_reloads_failed_)++; }
  void CountCertReload(bool ok) { (ok ? cert_reloads_ok_ : cert_reloads_failed_)++; }
  void SetCertificateNotAfter(int64_t unix_seconds) { cert_not_after_ = unix_seconds; }
  void CountClientCaReload(bool ok) { (ok ? client_ca_reloads_ok_ : client_ca_reloads_failed_)++; }
  // A refused TLS handshake: reason "client_cert" or "tls" (HandshakePolicy::FailureReason).
  void CountHandshakeFailure(const std::string& reason) {
    (reason == "client_cert" ? handshake_client_cert_ : handshake_tls_)++;
  }

  // A webhook connection closed to make room ("cap", "peer-share") or refused ("refused").
  void CountConnectionClosed(std::string_view reason) {
    (reason == "cap" ? closed_cap_ : reason == "peer-share" ? closed_peer_share_ : refused_)++;
  }

  // The Prometheus text format of everything above, plus shmguard_build_info{version}.
  std::string Render(const std::string& version) const;

 private:
  struct Histogram {
    std::array<uint64_t, kLatencyBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;
  std::map<int, uint64_t> http_errors_;
  std::atomic<uint64_t> patches_{0}, denials_{0};
  std::atomic<uint64_t> config_reloads_ok_{0}, config_reloads_failed_{0};
  std::atomic<uint64_t> cert_reloads_ok_{0}, cert_reloads_failed_{0};
  std::atomic<uint64_t> client_ca_reloads_ok_{0}, client_ca_reloads_failed_{0};
  std::atomic<uint64_t> handshake_client_cert_{0}, handshake_tls_{0};
  std::atomic<uint64_t> closed_cap_{0}, closed_peer_share_{0}, refused_{0};
  std::atomic<int64_t> cert_not_after_{0};
};

}  // namespace shmguard::server
