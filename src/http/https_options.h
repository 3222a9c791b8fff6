// What an HttpsServer is set up with (https_server.h): the port, the limits on a request and on
// connections, the deadlines, and the calls it makes when it closes or refuses a connection. Its
// event loops (event_loop.h) read the same options.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace shmguard::http {

struct HttpsServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 8443;                     // 0 picks a free port
  size_t max_body_bytes = 8 << 20;     // 413 above, before the body is read
  size_t max_header_bytes = 16 << 10;  // 431 above
  size_t max_connections = 10000;      // further connections are closed at once (see evict_idle)
  // At max_connections, a new connection closes a connection quiet the longest instead of being
  // refused: one that has not finished its TLS handshake, or an idle one (never one with a
  // request in flight or a response to send), of the peer address that holds the most
  // connections first, so that a client holding thousands of connections cannot keep out the
  // others (the kubelet's probes, the API server's reviews). Default: false (refused).
  bool evict_idle = false;
  // The share of max_connections one peer address may hold (0.5: half). A peer at its share
  // that opens another closes its own quietest connection for it, or is refused when it has
  // none that may be closed. 1: no share.
  double peer_share = 1.0;
  // Called on a loop thread for each connection closed to make room ("cap": the server was
  // full; "peer-share": its peer was at its share) and each refused ("refused"). Must be
  // thread-safe and cheap. Default: nothing.
  std::function<void(std::string_view reason)> on_evict;
  int keep_alive_seconds = 60;           // an idle connection is closed after this
  int request_timeout_seconds = 10;      // a handshake or a started request must complete in this
  int threads = 0;                       // event loops; 0 = the CPUs this process may run on (max 8)
  size_t max_read_per_wakeup = 1 << 20;  // read from one connection before the others get a turn
  // Called on the loop thread when a TLS handshake fails with a protocol error (not a client
  // that just went away), with OpenSSL's error queue still holding why. Default: nothing.
  std::function<void(SSL*)> on_handshake_failure;
};

}  // namespace shmguard::http
