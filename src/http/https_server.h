// The webhook's HTTPS transport (and, without TLS, the metrics port's): epoll event loops over
// non-blocking connections. cpp-httplib holds a thread per keep-alive connection and spends ~13
// syscalls per request; measured, its floor was 22% of nginx's rate on
// a 10 KB review before any JSON was parsed (bench/README.md). Here a request costs one read and
// one write, idle connections cost no thread, and every request must arrive whole within a
// deadline, so slow clients cannot hold the server.
//
// HTTP/1.1 and 1.0, keep-alive, pipelining, Content-Length bodies (chunked bodies get 411),
// "Expect: 100-continue".
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/values/result.h"
#include "http/http_connection.h"
#include "http/http_message.h"
#include "http/https_options.h"
#include "http/peer_table.h"

namespace shmguard::http {

// Called on a loop thread for every complete request; must be thread-safe and must not throw.

// A probe and metrics port's options (plain HTTP, with nullptr for the SSL_CTX): small requests
// only, one event loop, so idle and slow clients cost no thread and cannot starve the kubelet's
// probes; an idle connection is closed after 5 s, and a request must arrive whole within 5 s. At
// most 4,096 connections; past that a new one closes the longest idle one (evict_idle), so
// connections held open cannot turn a probe away.
HttpsServerOptions MetricsPortOptions(const std::string& bind_address, int port);

// Answers one request of such a port: GET /healthz (200 while the process serves), /readyz (200,
// or 503 with `not_ready` when that is not empty), /metrics (the Prometheus text that
// `render_metrics` makes); 405 for another method, 404 for another path.
void ServeMetricsPort(const HttpRequest& req, HttpResponse& res, const std::string& not_ready,
                      const std::function<std::string()>& render_metrics);

class HttpsServer {
 public:
  // `ctx` is borrowed and must outlive the server (certificates are set per handshake on it);
  // nullptr serves plain HTTP over TCP with the same framing, limits and deadlines (the
  // metrics and probe port).
  HttpsServer(HttpsServerOptions options, SSL_CTX* ctx, HttpHandler handler);
  ~HttpsServer();  // Stop()

  // Listens; returns the bound port. Fails with kIo when the address is taken.
  Result<int> Listen();
  // Starts the event loops. REQUIRES: Listen() succeeded.
  void Start();
  // Stops accepting at once, closes idle connections, lets requests already started finish
  // (within request_timeout_seconds), then joins the loops. Idempotent.
  void Stop();

  size_t connections() const { return connections_.load(); }

 private:
  void Loop(int epoll_fd);
  HttpsServerOptions options_;
  SSL_CTX* ctx_;
  HttpHandler handler_;
  int listen_fd_ = -1;
  std::vector<int> epoll_fds_, wake_fds_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> connections_{0};
  PeerTable peers_;
  bool started_ = false, stopped_ = false;
};

}  // namespace shmguard::http
