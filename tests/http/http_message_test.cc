// ParseRequestHead and AppendResponse: HTTP/1.1 framing without sockets.
#include "http/http_message.h"

#include <catch2/catch.hpp>

namespace shmguard::http {
namespace {

using Status = HeadParse::Status;

TEST_CASE("ParseRequestHead reads request line and headers", "[http_message]") {
  std::string req =
      "POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\ncontent-TYPE:  application/json \r\n"
      "Content-Length: 5\r\nExpect: 100-continue\r\n\r\nhello";
  HeadParse p = ParseRequestHead(req, 16384, 1 << 20);
  REQUIRE(p.status == Status::kComplete);
  CHECK(p.head.request.method == "POST");
  CHECK(p.head.request.target == "/mutate?timeout=10s");
  CHECK(p.head.request.path == "/mutate");
  CHECK(p.head.request.content_type == "application/json");
  CHECK(p.head.content_length == 5);
  CHECK(p.head.expect_continue);
  CHECK(p.head.keep_alive);
  CHECK(req.substr(p.head.head_bytes) == "hello");
}

TEST_CASE("ParseRequestHead decides keep-alive by version and Connection", "[http_message]") {
  struct Case {
    const char* head;
    bool keep_alive;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
  };
  for (const auto& c : cases) {
    CAPTURE(c.head);
    HeadParse p = ParseRequestHead(c.head, 16384, 1024);
    REQUIRE(p.status == Status::kComplete);
    CHECK(p.head.keep_alive == c.keep_alive);
  }
}

TEST_CASE("ParseRequestHead waits for the blank line and refuses what it cannot serve", "[http_message]") {
  struct Case {
    std::string received;
    Status status;
    int error_status;
  };
  const Case cases[] = {
      {"", Status::kIncomplete, 0},
      {"POST /mutate HTTP/1.1\r\nContent-Length: 3\r\n", Status::kIncomplete, 0},
      {std::string(20000, 'a'), Status::kError, 431},
      {"POST /mutate HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", Status::kError, 431},
      {"GARBAGE\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/2.0\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/1.1\r\nno colon here\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/1.1\r\nContent-Length: -1\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/1.1\r\nContent-Length: 2048\r\n\r\n", Status::kError, 413},
      {"POST /mutate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", Status::kError, 411},
      {"POST /mutate HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", Status::kComplete, 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.received.substr(0, 60));
    HeadParse p = ParseRequestHead(c.received, 16384, 1024);
    CHECK(p.status == c.status);
    CHECK(p.error_status == c.error_status);
  }
}

// RFC 9112 framing, case by case: what is accepted, and the status of what is not.
TEST_CASE("ParseRequestHead frames requests strictly, per RFC 9112", "[http_message]") {
  struct Case {
    std::string head;
    Status status;
    int error_status;
    size_t content_length = 0;
  };
  const std::string post = "POST /mutate HTTP/1.1\r\nHost: h\r\n";
  std::string many_fields = post;
  for (int i = 0; i < 100; ++i) many_fields += "X-" + std::to_string(i) + ": v\r\n";
  const Case cases[] = {
      // Accepted.
      {post + "Content-Length: 5\r\n\r\n", Status::kComplete, 0, 5},
      {post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", Status::kComplete, 0, 5},  // identical repeats
      {post + "Content-Length: 5, 5\r\n\r\n", Status::kComplete, 0, 5},                    // an identical list
      {post + "Content-Length:5\r\n\r\n", Status::kComplete, 0, 5},                        // no space after the colon
      {post + "Content-Length: \t5 \t\r\n\r\n", Status::kComplete, 0, 5},                  // optional whitespace
      {post + "X-Any: caf\xc3\xa9 \"x\"\r\n\r\n", Status::kComplete, 0},                   // obs-text in a value
      {post + "X-Tab: a\tb\r\n\r\n", Status::kComplete, 0},
      {post + "x-weird!#$%&'*+-.^_`|~: v\r\n\r\n", Status::kComplete, 0},              // every tchar
      {many_fields.substr(0, many_fields.size() - 9) + "\r\n", Status::kComplete, 0},  // exactly 100 fields
      {"GET /healthz HTTP/1.0\r\n\r\n", Status::kComplete, 0},
      {"POST /mutate?timeout=10s&podSecurity=baseline HTTP/1.1\r\n\r\n", Status::kComplete, 0},
      {post + "Content-Length: 3\r\n", Status::kIncomplete, 0},  // the blank line is to come
      {post + "Content-Length: 3\r\n\r", Status::kIncomplete, 0},
      // Content-Length.
      {post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", Status::kError, 400},
      {post + "Content-Length: 5, 6\r\n\r\n", Status::kError, 400},
      {post + "Content-Length: +5\r\n\r\n", Status::kError, 400},
      {post + "Content-Length: 5 5\r\n\r\n", Status::kError, 400},
      {post + "Content-Length: 0x10\r\n\r\n", Status::kError, 400},
      {post + "Content-Length: \r\n\r\n", Status::kError, 400},
      {post + "Content-Length: 2048\r\n\r\n", Status::kError, 413},
      // Transfer-Encoding.
      {post + "Transfer-Encoding: chunked\r\n\r\n", Status::kError, 411},
      {post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", Status::kError, 400},
      {post + "Content-Length: 5\r\nTransfer-Encoding: identity\r\n\r\n", Status::kError, 400},
      // Field names and lines.
      {post + "Content-Length : 5\r\n\r\n", Status::kError, 400},  // whitespace before the colon
      {post + "Content-Length\t: 5\r\n\r\n", Status::kError, 400},
      {post + "X-A: b\r\n  folded\r\n\r\n", Status::kError, 400},  // obsolete line folding
      {post + "X-A: b\r\n\tfolded\r\n\r\n", Status::kError, 400},
      {post + ": no name\r\n\r\n", Status::kError, 400},
      {post + "X(A): b\r\n\r\n", Status::kError, 400},
      {post + "X-A: a" + std::string(1, '\0') + "b\r\n\r\n", Status::kError, 400},  // NUL
      {post + "X-A: a\x01"
              "b\r\n\r\n",
       Status::kError, 400},
      {post + "X-A: a\x7f"
              "b\r\n\r\n",
       Status::kError, 400},
      {post + "Host: again\r\n\r\n", Status::kError, 400},
      {many_fields + "\r\n", Status::kError, 431},  // 101 fields
      // Line endings: refused as soon as they arrive, not at a timeout.
      {"POST /mutate HTTP/1.1\nHost: h\n\n", Status::kError, 400},
      {"POST /mutate HTTP/1.1\n", Status::kError, 400},
      {post + "X-A: b\n", Status::kError, 400},
      {post + "X-A: b\rc\r\n\r\n", Status::kError, 400},
      // Request lines.
      {"POST  /mutate HTTP/1.1\r\n\r\n", Status::kError, 400},
      {"POST /mutate  HTTP/1.1\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/1.1 \r\n\r\n", Status::kError, 400},
      {" POST /mutate HTTP/1.1\r\n\r\n", Status::kError, 400},
      {"POST\t/mutate HTTP/1.1\r\n\r\n", Status::kError, 400},
      {"POST http://shmguard.svc/mutate HTTP/1.1\r\n\r\n", Status::kError, 400},  // absolute form
      {"CONNECT shmguard.svc:443 HTTP/1.1\r\n\r\n", Status::kError, 400},         // authority form
      {"OPTIONS * HTTP/1.1\r\n\r\n", Status::kError, 400},                        // asterisk form
      {"POST /mu\x01tate HTTP/1.1\r\n\r\n", Status::kError, 400},
      {"POST /mutate HTTP/1.2\r\n\r\n", Status::kError, 400},
      {"POST /mutate http/1.1\r\n\r\n", Status::kError, 400},
      {"PO(ST /mutate HTTP/1.1\r\n\r\n", Status::kError, 400},
  };
  static_assert(std::size(cases) >= 30);
  for (const auto& c : cases) {
    CAPTURE(c.head.substr(0, 80));
    HeadParse p = ParseRequestHead(c.head, 16384, 1024);
    CHECK(p.status == c.status);
    CHECK(p.error_status == c.error_status);
    if (p.status == Status::kComplete) CHECK(p.head.content_length == c.content_length);
    if (p.status == Status::kError) CHECK_FALSE(p.error.empty());
  }
}

TEST_CASE("AppendResponse frames a response", "[http_message]") {
  HttpResponse r;
  r.status = 405;
  r.body = "{}";
  r.headers.emplace_back("Allow", "POST");
  std::string out;
  AppendResponse(out, r, true);
  CHECK(out ==
        "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        "Allow: POST\r\nConnection: close\r\n\r\n{}");
}

}  // namespace
}  // namespace shmguard::http
