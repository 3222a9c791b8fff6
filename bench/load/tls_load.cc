// A closed-loop HTTPS client for what wrk cannot do: pick the TLS version, show a client
// certificate (mutual TLS), and open a new connection — a full handshake, no session
// resumption — for every request. bench/run.sh measures TLS 1.3 against 1.2 and the cost of
// mutual TLS with it.
//
// Usage: tls_load PORT PATH BODY_FILE SECONDS CONNECTIONS [--tls1.2] [--new-connections]
//                 [--cert FILE --key FILE]
// Prints: RESULT rps=... requests=... handshakes=... errors=...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tls_client.h"

using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int port = 0;
  std::string path, body;
  double seconds = 5;
  int connections = 1;
  bool tls12 = false, new_connections = false;
  std::string cert, key;
};

using bench::Close;
using bench::Connect;

// Sends the request and reads one response (Content-Length body): true on a 200.
bool Exchange(SSL* ssl, const std::string& request) {
  if (SSL_write(ssl, request.data(), static_cast<int>(request.size())) != static_cast<int>(request.size())) {
    return false;
  }
  std::string buf;
  return bench::ReadResponse(ssl, buf);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: tls_load PORT PATH BODY_FILE SECONDS CONNECTIONS [--tls1.2] [--new-connections] "
                 "[--cert FILE --key FILE]\n");
    return 2;
  }
  Options o;
  o.port = std::atoi(argv[1]);
  o.path = argv[2];
  std::ifstream in(argv[3], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  o.body = ss.str();
  o.seconds = std::atof(argv[4]);
  o.connections = std::atoi(argv[5]);
  for (int i = 6; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tls1.2") o.tls12 = true;
    if (a == "--new-connections") o.new_connections = true;
    if (a == "--cert" && i + 1 < argc) o.cert = argv[++i];
    if (a == "--key" && i + 1 < argc) o.key = argv[++i];
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);  // every handshake a full one
  if (o.tls12) SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
  if (!o.cert.empty() && (SSL_CTX_use_certificate_chain_file(ctx, o.cert.c_str()) != 1 ||
                          SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM) != 1)) {
    std::fprintf(stderr, "tls_load: cannot load %s / %s\n", o.cert.c_str(), o.key.c_str());
    return 2;
  }
  std::string request = "POST " + o.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                        (o.new_connections ? "Connection: close\r\n" : "") +
                        "Content-Length: " + std::to_string(o.body.size()) + "\r\n\r\n" + o.body;
  std::atomic<long> requests{0}, handshakes{0}, errors{0};
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&] {
      SSL* ssl = nullptr;
      while (Clock::now() < end) {
        if (!ssl) {
          ssl = Connect(ctx, o.port);
          if (!ssl) {
            ++errors;
            continue;
          }
          ++handshakes;
        }
        if (Exchange(ssl, request)) {
          ++requests;
        } else {
          ++errors;
          Close(ssl);
          ssl = nullptr;
          continue;
        }
        if (o.new_connections) {
          Close(ssl);
          ssl = nullptr;
        }
      }
      if (ssl) Close(ssl);
    });
  }
  for (auto& t : threads) t.join();
  std::printf("RESULT rps=%.1f requests=%ld handshakes=%ld errors=%ld\n", requests / o.seconds, requests.load(),
              handshakes.load(), errors.load());
  SSL_CTX_free(ctx);
  return 0;
}
