// One event loop of the webhook's HTTPS transport (HttpsServer runs one per thread): epoll over
// non-blocking OpenSSL connections, each request read whole within its deadline, then handed
// to the handler; keep-alive, pipelining, 100-continue, lingering close, and on stop a drain
// that answers what was already sent.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstddef>

#include "http/http_connection.h"
#include "http/https_options.h"
#include "http/peer_table.h"

namespace shmguard::http {

struct EventLoopSetup {
  int epoll_fd;   // has listen_fd (EPOLLEXCLUSIVE) and wake_fd registered
  int listen_fd;  // non-blocking; shared by all loops
  int wake_fd;    // an eventfd written to make the loop look at `stopping`
  SSL_CTX* ctx;
  const HttpsServerOptions& options;
  const HttpHandler& handler;
  const std::atomic<bool>& stopping;  // set: stop accepting, drain, return
  std::atomic<size_t>& connections;   // open connections over all loops
  PeerTable& peers;                   // and of each peer address
};

// Runs until `stopping` is set and every connection is closed (drained or timed out).
void RunEventLoop(const EventLoopSetup& setup);

}  // namespace shmguard::http
