// RunEventLoop's own rules — the connection limit, the keep-alive and request deadlines, a client
// that does not read, and the drain on Stop — over plain TCP (HttpsServer without an SSL_CTX),
// so that each test sees the transport's bytes and nothing of TLS. What TLS adds (OpenSSL's
// read-ahead buffer) is in https_server_test.cc; the HTTP side in http_connection_test.cc.
#include "http/event_loop.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "http/https_server.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::http {
namespace {

using Clock = std::chrono::steady_clock;

// A plain-TCP server on loopback whose handler answers with the size of the body, or with
// `reply_bytes` bytes when that is set.
struct PlainServer {
  explicit PlainServer(HttpsServerOptions o, size_t reply_bytes = 0) {
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.threads = 1;
    server = std::make_unique<HttpsServer>(o, nullptr, [reply_bytes](const HttpRequest& req, HttpResponse& res) {
      res.content_type = "text/plain";
      res.body = reply_bytes ? std::string(reply_bytes, 'r') : std::to_string(req.body.size());
    });
    auto p = server->Listen();
    REQUIRE(p);
    port = *p;
    server->Start();
  }
  std::unique_ptr<HttpsServer> server;
  int port = 0;
};

// A loopback connection, closed by the destructor.
struct Client {
  explicit Client(int port) : fd(test::ConnectLoopback(port)) { REQUIRE(fd >= 0); }
  ~Client() {
    if (fd >= 0) ::close(fd);
  }
  bool Send(const std::string& bytes) const {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // One response's head and body (Content-Length), or "" when the connection closes first.
  std::string Response() {
    char buf[4096];
    while (true) {
      const size_t head_end = pending.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const size_t at = pending.find("Content-Length: ");
        const size_t length = at < head_end ? std::stoul(pending.substr(at + 16)) : 0;
        if (pending.size() >= head_end + 4 + length) {
          std::string response = pending.substr(0, head_end + 4 + length);
          pending.erase(0, response.size());
          return response;
        }
      }
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return "";
      pending.append(buf, static_cast<size_t>(n));
    }
  }
  // True when the server closes the connection (EOF or reset) before sending anything more;
  // false when it sends a byte or says nothing for the 10 s of the socket's read timeout.
  bool ClosedByServer() const {
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
  int fd;
  std::string pending;
};

std::string Post(const std::string& body) {
  return "POST /size HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

bool WaitForConnections(const HttpsServer& server, size_t n) {
  const auto until = Clock::now() + std::chrono::seconds(5 * test::kSlowdown);
  while (server.connections() != n && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return server.connections() == n;
}

TEST_CASE("event loop: a connection over max_connections is closed at once and the others are served",
          "[event_loop][net]") {
  HttpsServerOptions o;
  o.max_connections = 2;
  PlainServer s(o);
  Client a(s.port), b(s.port);
  REQUIRE(a.Send(Post("abc")));
  REQUIRE(b.Send(Post("abcd")));
  CHECK(a.Response().find("\r\n\r\n3") != std::string::npos);
  CHECK(b.Response().find("\r\n\r\n4") != std::string::npos);
  CHECK(s.server->connections() == 2);

  Client over(s.port);  // the kernel accepts it; the loop closes it without reading
  (void)over.Send(Post("x"));
  CHECK(over.ClosedByServer());
  CHECK(s.server->connections() == 2);

  REQUIRE(a.Send(Post("abcde")));  // the two kept connections still carry requests
  CHECK(a.Response().find("\r\n\r\n5") != std::string::npos);

  ::close(b.fd);  // room again: a new connection is served
  b.fd = -1;
  REQUIRE(WaitForConnections(*s.server, 1));
  Client c(s.port);
  REQUIRE(c.Send(Post("")));
  CHECK(c.Response().rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("event loop: an idle connection is closed after keep_alive_seconds, a late request gets 408",
          "[event_loop][net]") {
  HttpsServerOptions o;
  o.keep_alive_seconds = 1;
  o.request_timeout_seconds = 1;
  PlainServer s(o);

  Client idle(s.port);
  REQUIRE(idle.Send(Post("abc")));
  CHECK(idle.Response().rfind("HTTP/1.1 200", 0) == 0);
  auto start = Clock::now();
  CHECK(idle.ClosedByServer());
  auto waited = Clock::now() - start;
  CHECK(waited >= std::chrono::milliseconds(900));
  CHECK(waited < std::chrono::seconds(3 * test::kSlowdown));  // not the client's 10 s read timeout

  Client slow(s.port);
  start = Clock::now();
  REQUIRE(slow.Send("POST /size HTTP/1.1\r\nHost: localhost\r\n"));  // and never the rest
  const std::string reply = slow.Response();
  waited = Clock::now() - start;
  CHECK(reply.rfind("HTTP/1.1 408", 0) == 0);
  CHECK(reply.find("Connection: close") != std::string::npos);
  CHECK(waited >= std::chrono::milliseconds(900));
  CHECK(waited < std::chrono::seconds(3 * test::kSlowdown));
  CHECK(slow.ClosedByServer());
  CHECK(WaitForConnections(*s.server, 0));
}

TEST_CASE("event loop: a client that stops reading its response is dropped after request_timeout_seconds",
          "[event_loop][net]") {
  HttpsServerOptions o;
  o.request_timeout_seconds = 1;
  PlainServer s(o, 64 << 20);  // far more than the socket buffers hold
  Client reader(s.port);
  int small = 4096;
  setsockopt(reader.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  REQUIRE(reader.Send(Post("abc")));
  REQUIRE(WaitForConnections(*s.server, 1));
  // The loop waits for the socket to drain (EPOLLOUT), never blocks on it: another client is
  // answered meanwhile, and the stuck one is closed once its deadline passes.
  PlainServer other(HttpsServerOptions{});
  Client c(other.port);
  REQUIRE(c.Send(Post("abcd")));
  CHECK(c.Response().find("\r\n\r\n4") != std::string::npos);
  CHECK(WaitForConnections(*s.server, 0));
}

TEST_CASE(
    "event loop: Stop answers a request already started and the next one on an idle connection, "
    "closes a connection left unused after the drain window, and refuses new ones",
    "[event_loop][net]") {
  PlainServer s(HttpsServerOptions{});
  Client reused(s.port), unused(s.port), started(s.port);
  for (Client* c : {&reused, &unused}) {
    REQUIRE(c->Send(Post("abc")));
    CHECK(c->Response().rfind("HTTP/1.1 200", 0) == 0);
  }
  const std::string request = Post("0123456789");
  REQUIRE(started.Send(request.substr(0, request.size() - 4)));  // the head and part of the body
  REQUIRE(WaitForConnections(*s.server, 3));

  const auto stop = Clock::now();
  auto stopped = std::async(std::launch::async, [&] { s.server->Stop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // Stop wakes the loop at once
  // An idle keep-alive connection is not closed under a client that may be sending on it: its
  // next request is answered, with Connection: close.
  REQUIRE(reused.Send(Post("abcd")));
  std::string reply = reused.Response();
  CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(reply.find("Connection: close") != std::string::npos);
  CHECK(reused.ClosedByServer());
  REQUIRE(started.Send(request.substr(request.size() - 4)));
  reply = started.Response();
  CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(reply.find("Connection: close") != std::string::npos);
  CHECK(reply.find("\r\n\r\n10") != std::string::npos);
  CHECK(started.ClosedByServer());
  for (Client* c : {&reused, &started}) {
    ::close(c->fd);  // the server's lingering close ends with the client's
    c->fd = -1;
  }
  CHECK(stopped.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);  // still draining
  // The connection its client leaves unused is closed when the drain window ends.
  CHECK(unused.ClosedByServer());
  CHECK(Clock::now() - stop >= std::chrono::milliseconds(1900));
  CHECK(stopped.wait_for(std::chrono::seconds(5 * test::kSlowdown)) == std::future_status::ready);
  CHECK(s.server->connections() == 0);
  CHECK(test::ConnectLoopback(s.port) < 0);  // nothing listens any more
}

}  // namespace
}  // namespace shmguard::http
