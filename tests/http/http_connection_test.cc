// HttpConnection without a socket: bytes in, responses out — pipelining in order, a body that
// arrives in pieces, 100-continue, Connection: close, draining, and one answer to a framing
// error followed by nothing.
#include "http/http_connection.h"

#include <catch2/catch.hpp>
#include <cstring>

namespace shmguard::http {
namespace {

// A connection whose handler echoes "METHOD PATH BODY".
struct Echo {
  HttpConnection c;
  HttpLimits limits;
  int calls = 0;
  HttpHandler handler = [this](const HttpRequest& req, HttpResponse& res) {
    ++calls;
    res.content_type = "text/plain";
    res.body = std::string(req.method) + " " + std::string(req.path) + " " + std::string(req.body);
  };
  void Receive(const std::string& bytes, bool stopping = false) {
    std::memcpy(c.in.Prepare(bytes.size()), bytes.data(), bytes.size());
    c.in.Commit(bytes.size());
    c.Handle(limits, handler, stopping);
  }
  size_t Count(const std::string& needle) const {
    size_t n = 0;
    for (size_t at = c.out.find(needle); at != std::string::npos; at = c.out.find(needle, at + 1)) ++n;
    return n;
  }
};

std::string Post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
         "\r\n" + body;
}

TEST_CASE("HttpConnection answers pipelined requests in order and keeps the connection", "[http_connection]") {
  Echo e;
  e.Receive(Post("/a", "1") + Post("/b", "22") + "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(e.calls == 3);
  CHECK(e.Count("HTTP/1.1 200") == 3);  // three responses written
  const size_t a = e.c.out.find("POST /a 1"), b = e.c.out.find("POST /b 22"), c = e.c.out.find("GET /c ");
  CHECK(a != std::string::npos);
  CHECK(a < b);
  CHECK(b < c);
  CHECK(c != std::string::npos);
  CHECK_FALSE(e.c.close_after_write);
  CHECK(e.c.in.size() == 0);
}

TEST_CASE("HttpConnection waits for a body sent in pieces, with 100 Continue when asked", "[http_connection]") {
  Echo e;
  const std::string request = Post("/mutate", "{\"k\":1}", "Expect: 100-continue\r\n");
  const size_t head = request.find("\r\n\r\n") + 4;
  e.Receive(request.substr(0, head));
  CHECK(e.calls == 0);
  CHECK(e.c.out == "HTTP/1.1 100 Continue\r\n\r\n");
  CHECK(e.c.in_expected == request.size());
  e.Receive(request.substr(head, 3));
  CHECK(e.calls == 0);
  e.Receive(request.substr(head + 3));
  CHECK(e.calls == 1);
  CHECK(e.Count("100 Continue") == 1);
  CHECK(e.c.out.find("POST /mutate {\"k\":1}") != std::string::npos);
}

TEST_CASE("HttpConnection closes after Connection: close or when the server drains", "[http_connection]") {
  Echo closing;
  closing.Receive(Post("/a", "", "Connection: close\r\n") + Post("/b", ""));
  CHECK(closing.calls == 1);  // nothing after the closing request is read
  CHECK(closing.c.close_after_write);
  CHECK(closing.c.out.find("Connection: close\r\n") != std::string::npos);

  Echo draining;
  draining.Receive(Post("/a", ""), /*stopping=*/true);
  CHECK(draining.calls == 1);
  CHECK(draining.c.close_after_write);
}

TEST_CASE("HttpConnection answers a framing error once and reads nothing more", "[http_connection]") {
  Echo e;
  e.Receive("POST /a HTTP/1.1\nHost: x\r\n\r\n" + Post("/b", ""));  // a bare LF
  CHECK(e.calls == 0);
  CHECK(e.c.out.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(e.c.close_after_write);
  CHECK(e.c.in.size() == 0);
  const std::string answered = e.c.out;
  e.Receive(Post("/c", ""));
  CHECK(e.c.out == answered);

  Echo big;
  big.limits.max_body_bytes = 10;
  big.Receive("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n");
  CHECK(big.calls == 0);
  CHECK(big.c.out.rfind("HTTP/1.1 413 ", 0) == 0);  // before the body arrives
}

}  // namespace
}  // namespace shmguard::http
