// ParseRequestHead and AppendResponse: HTTP/1.1 framing without sockets.
#include <catch2/catch.hpp>

#include "server/http_message.h"

namespace shmguard::server {
namespace {

using Status = HeadParse::Status;

TEST_CASE("ParseRequestHead reads request line and headers", "[http_message]") {
  std::string req = "POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\ncontent-TYPE:  application/json \r\n"
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

TEST_CASE("AppendResponse frames a response", "[http_message]") {
  HttpResponse r;
  r.status = 405;
  r.body = "{}";
  r.headers.emplace_back("Allow", "POST");
  std::string out;
  AppendResponse(out, r, true);
  CHECK(out == "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
               "Allow: POST\r\nConnection: close\r\n\r\n{}");
}

}  // namespace
}  // namespace shmguard::server
