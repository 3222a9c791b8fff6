// HttpsServer (the listening socket and its loops) and what TLS adds to the event loop under it,
// with a handler of its own; the loop's deadlines, limits and drain are in event_loop_test.cc.
#include "http/https_server.h"

#include <openssl/ssl.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::http {
namespace {

// A server that answers every request with the size of its body.
struct SizeServer {
  explicit SizeServer(HttpsServerOptions o) {
    test::IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
    ctx = SSL_CTX_new(TLS_server_method());
    REQUIRE(SSL_CTX_use_certificate_chain_file(ctx, dir.File("tls.crt").c_str()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx, dir.File("tls.key").c_str(), SSL_FILETYPE_PEM) == 1);
    o.bind_address = "127.0.0.1";
    o.port = 0;
    server = std::make_unique<HttpsServer>(o, ctx, [](const HttpRequest& req, HttpResponse& res) {
      res.content_type = "text/plain";
      res.body = std::to_string(req.body.size());
    });
    auto p = server->Listen();
    REQUIRE(p);
    port = *p;
    server->Start();
  }
  ~SizeServer() {
    server.reset();
    SSL_CTX_free(ctx);
  }
  test::TempDir dir;
  SSL_CTX* ctx = nullptr;
  std::unique_ptr<HttpsServer> server;
  int port = 0;
};

TEST_CASE("https: a connection stopped at the read limit with records left in OpenSSL's buffer is read on",
          "[https_server][net]") {
  // 64 records of 1 KB written at once: OpenSSL reads ahead ~16 of them per read(), four times
  // the limit, so the loop stops with whole records buffered that epoll never reports.
  HttpsServerOptions o;
  o.threads = 1;
  o.max_read_per_wakeup = 4096;
  o.request_timeout_seconds = 5;
  SizeServer s(o);
  test::TlsConnection c(s.port, s.dir.File("ca.crt"));
  REQUIRE(c.ok());
  std::string body(64 << 10, 'x');
  std::string request =
      "POST /size HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  auto start = std::chrono::steady_clock::now();
  bool sent = true;
  for (size_t at = 0; sent && at < request.size(); at += 1024) sent = c.Write(request.substr(at, 1024));
  REQUIRE(sent);
  auto reply = c.Read();
  CHECK(reply.status == 200);
  CHECK(reply.body == "65536");
  CHECK(std::chrono::steady_clock::now() - start <
        std::chrono::seconds(2 * test::kSlowdown));  // not the request timeout
}

TEST_CASE("HttpsServer::Listen names the address it cannot listen on", "[https_server][net]") {
  HttpsServerOptions o;
  o.bind_address = "127.0.0.1";
  o.port = 0;
  HttpsServer first(o, nullptr, [](const HttpRequest&, HttpResponse&) {});
  auto port = first.Listen();
  REQUIRE(port);
  CHECK(*port > 0);  // port 0 picked a free one

  o.port = *port;
  HttpsServer second(o, nullptr, [](const HttpRequest&, HttpResponse&) {});
  auto taken = second.Listen();
  REQUIRE_FALSE(taken);
  CHECK(taken.error().code == Code::kIo);
  CHECK_THAT(taken.error().message, Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(*port)) &&
                                        Catch::Contains("Address already in use"));
}

}  // namespace
}  // namespace shmguard::http
