// Hostile clients against the real server on loopback: oversized and malformed input, protocol
// abuse, slowloris and idle connections, and thousands of randomly mutated reviews. The metrics
// port's are in hostile_metrics_port_test.cc.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "server/hostile_fixture.h"
#include "server/server.h"
#include "server/test_server.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using hostile_test::kPod;
using hostile_test::RaiseFdLimit;
using hostile_test::Request;
using hostile_test::Server;
using nlohmann::json;
using test::TlsConnection;
using Clock = std::chrono::steady_clock;

TEST_CASE("hostile: a 100 MB body is refused with 413 before it is read", "[hostile][net]") {
  Server s;
  TlsConnection c(s.port(), s.ca);
  REQUIRE(c.ok());
  std::string head =
      "POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
      "Content-Length: 104857600\r\n\r\n";
  REQUIRE(c.Write(head + std::string(1 << 20, '[')));  // the client is still sending
  auto reply = c.Read();
  CHECK(reply.status == 413);
  CHECK_THAT(reply.body, Catch::Contains("exceeds the limit of 8388608"));
  CHECK(TlsConnection(s.port(), s.ca).Post("/mutate", test::ReviewJson(kPod, "team-a")).status == 200);
}

TEST_CASE("hostile: a 3 MB review sent in small records is answered as the small one is", "[hostile][net]") {
  // The body outgrows the room given up front (1 MiB) and arrives in ~750 TLS records; then a
  // request that arrives whole, with the next one's head behind it, on the same connection.
  Server s;
  TlsConnection c(s.port(), s.ca);
  REQUIRE(c.ok());
  std::string small = test::ReviewJson(kPod, "team-a");
  auto expected = c.Post("/mutate", small);
  REQUIRE(expected.status == 200);
  std::string large = Request(std::string(3 << 20, ' ') + small);
  bool sent = true;
  for (size_t at = 0; sent && at < large.size(); at += 4096) sent = c.Write(large.substr(at, 4096));
  REQUIRE(sent);
  auto reply = c.Read();
  CHECK(reply.status == 200);
  CHECK(json::parse(reply.body)["response"]["patch"] == json::parse(expected.body)["response"]["patch"]);
  std::string next = Request(small);
  REQUIRE(c.Write(Request(small) + next.substr(0, 40)));
  CHECK(c.Read().status == 200);
  REQUIRE(c.Write(next.substr(40)));
  CHECK(c.Read().status == 200);
}

TEST_CASE("hostile: 100,000 nested brackets, truncated and non-JSON bodies get 400", "[hostile][net]") {
  Server s;
  TlsConnection c(s.port(), s.ca);
  REQUIRE(c.ok());
  std::string valid = test::ReviewJson(kPod, "team-a");
  for (const std::string& body :
       {std::string(100000, '['), valid.substr(0, valid.size() / 2), std::string("\x00\xff\xfe", 3),
        std::string("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":NaN}")}) {
    auto reply = c.Post("/mutate", body);
    CHECK(reply.status == 400);
  }
  CHECK(c.Post("/mutate", valid).status == 200);  // the same connection still works
}

TEST_CASE("hostile: HTTP/1.0, pipelining and Expect: 100-continue", "[hostile][net]") {
  Server s;
  std::string body = test::ReviewJson(kPod, "team-a");
  SECTION("HTTP/1.0 is answered, then the connection closes") {
    TlsConnection c(s.port(), s.ca);
    REQUIRE(c.Write(Request(body, "HTTP/1.0")));
    auto reply = c.Read();
    CHECK(reply.status == 200);
    CHECK(reply.headers["connection"] == "close");
    CHECK(c.Read().status == 0);  // closed
  }
  SECTION("three pipelined requests are answered in order") {
    TlsConnection c(s.port(), s.ca);
    std::string three;
    for (int i = 0; i < 3; ++i)
      three += Request(test::ReviewJson(kPod, "team-a", "CREATE", "Pod", "p" + std::to_string(i)));
    REQUIRE(c.Write(three));
    for (int i = 0; i < 3; ++i) {
      auto reply = c.Read();
      REQUIRE(reply.status == 200);
      CHECK(json::parse(reply.body)["response"]["uid"] == "p" + std::to_string(i));
    }
  }
  SECTION("Expect: 100-continue gets 100 Continue, then the answer") {
    TlsConnection c(s.port(), s.ca);
    std::string req = Request(body, "HTTP/1.1", "Expect: 100-continue\r\n");
    size_t head = req.find("\r\n\r\n") + 4;
    REQUIRE(c.Write(req.substr(0, head)));
    CHECK(c.Read().status == 100);
    REQUIRE(c.Write(req.substr(head)));
    CHECK(c.Read().status == 200);
  }
  SECTION("chunked bodies and bad request lines are refused") {
    TlsConnection a(s.port(), s.ca);
    a.Write("POST /mutate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    CHECK(a.Read().status == 411);
    TlsConnection b(s.port(), s.ca);
    b.Write("GARBAGE\r\n\r\n");
    CHECK(b.Read().status == 400);
    TlsConnection d(s.port(), s.ca);
    d.Write("POST /mutate HTTP/2.0\r\n\r\n");
    CHECK(d.Read().status == 400);
  }
}

// Framing errors over the real transport: one well-formed response each, at once (a bare LF
// does not wait for the request timeout), then the connection is closed — nothing sent after
// the bad head is ever read as a second request.
TEST_CASE("hostile: framing errors are answered at once with one response, then the connection closes",
          "[hostile][net]") {
  Server s(/*request_timeout_seconds=*/30);
  const std::string body = test::ReviewJson(kPod, "team-a");
  const std::string smuggled = Request(body);  // would be a second request if the first were misread
  const std::pair<std::string, int> cases[] = {
      {"POST /mutate HTTP/1.1\nHost: localhost\nContent-Length: 2\n\n{}", 400},
      {"POST /mutate HTTP/1.1\r\nHost: l\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}" + smuggled, 400},
      {"POST /mutate HTTP/1.1\r\nHost: l\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
           smuggled,
       400},
      {"POST /mutate HTTP/1.1\r\nHost: l\r\nContent-Length : 2\r\n\r\n{}" + smuggled, 400},
      {"POST /mutate HTTP/1.1\r\nHost: l\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\n{}", 400},
      {"POST /mutate HTTP/1.1\r\nHost: l\r\nX: a" + std::string(1, '\0') + "\r\n\r\n", 400},
      {"POST http://localhost/mutate HTTP/1.1\r\nHost: l\r\n\r\n", 400},
      {"POST  /mutate HTTP/1.1\r\nHost: l\r\n\r\n", 400},
      {"POST /mutate HTTP/1.1\r\nHost: l\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 411},
  };
  for (const auto& [request, status] : cases) {
    CAPTURE(request.substr(0, 60));
    TlsConnection c(s.port(), s.ca);
    REQUIRE(c.ok());
    auto start = Clock::now();
    REQUIRE(c.Write(request));
    auto reply = c.Read();
    CHECK(reply.status == status);
    CHECK(reply.headers["connection"] == "close");
    CHECK(reply.headers["content-length"] == std::to_string(reply.body.size()));
    CHECK_FALSE(reply.body.empty());
    CHECK(c.Read().status == 0);  // closed: no second response
    CHECK(Clock::now() - start < std::chrono::seconds(5 * test::kSlowdown));
  }
  // A field too many: 431, closed as well.
  std::string many = "POST /mutate HTTP/1.1\r\nHost: l\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  TlsConnection c(s.port(), s.ca);
  REQUIRE(c.Write(many + "\r\n"));
  CHECK(c.Read().status == 431);
  CHECK(c.Read().status == 0);
}

TEST_CASE("hostile: plaintext HTTP on the TLS port is dropped, the server stays up", "[hostile][net]") {
  Server s;
  int fd = test::ConnectLoopback(s.port());
  REQUIRE(fd >= 0);
  std::string req = Request(test::ReviewJson(kPod, "team-a"));
  CHECK(::write(fd, req.data(), req.size()) > 0);
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf);  // a TLS alert or nothing, then EOF; never an HTTP answer
  CHECK((n <= 0 || std::string(buf, static_cast<size_t>(n)).find("HTTP/1.1 200") == std::string::npos));
  ::close(fd);
  CHECK(TlsConnection(s.port(), s.ca).Post("/mutate", test::ReviewJson(kPod, "team-a")).status == 200);
}

TEST_CASE("hostile: with 256 slowloris and 256 idle connections a normal client is answered within 100 ms",
          "[hostile][net]") {
  RaiseFdLimit();
  Server s(3);  // requests must complete within 3 s
  std::vector<std::unique_ptr<TlsConnection>> slow, idle;
  for (int i = 0; i < 256; ++i) {
    idle.push_back(std::make_unique<TlsConnection>(s.port(), s.ca));
    REQUIRE(idle.back()->ok());
    slow.push_back(std::make_unique<TlsConnection>(s.port(), s.ca));
    REQUIRE(slow.back()->ok());
  }
  std::string dribble = "POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n";
  double worst_ms = 0;
  for (int second = 0; second < 5; ++second) {  // a byte per second on each slow connection
    for (auto& c : slow) c->Write(std::string(1, dribble[static_cast<size_t>(second)]));
    auto start = Clock::now();
    TlsConnection normal(s.port(), s.ca);
    REQUIRE(normal.ok());
    CHECK(normal.Post("/mutate", test::ReviewJson(kPod, "team-a")).status == 200);
    worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  CAPTURE(worst_ms);
  CHECK(worst_ms < 100 * test::kSlowdown);
  // The slow requests passed their deadline: the server answered 408 and closed them.
  auto reply = slow.front()->Read();
  CHECK(reply.status == 408);
}

// Mutations of a valid review: wrong types, huge and negative numbers, invalid values, deletions.
json Mutate(json review, std::mt19937& rng) {
  const json replacements[] = {nullptr,
                               true,
                               -1,
                               0,
                               1e308,
                               -1e308,
                               9223372036854775807LL,
                               json::array(),
                               json::object(),
                               "",
                               "x",
                               "-1",
                               "99999999999999999999",
                               "1e19",
                               "8Ei",
                               "-8Ei",
                               "NaN",
                               "1.5",
                               "64MB",
                               " 1Gi",
                               "\u00e9\u00e9",
                               std::string(10000, 'a')};
  std::vector<json::json_pointer> paths;
  std::function<void(const json&, const std::string&)> walk = [&](const json& j, const std::string& p) {
    paths.emplace_back(p);
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) walk(it.value(), p + "/" + it.key());
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i) walk(j[i], p + "/" + std::to_string(i));
    }
  };
  walk(review, "");
  int n = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) {
    auto p = paths[rng() % paths.size()];
    if (p.empty()) continue;
    try {
      if (rng() % 4 == 0) {
        review.at(p.parent_pointer()).is_object() ? (void)review.at(p.parent_pointer()).erase(p.back()) : (void)0;
      } else {
        review[p] = replacements[rng() % std::size(replacements)];
      }
    } catch (const json::exception&) {
    }
  }
  return review;
}

TEST_CASE("hostile: 3,000 randomly mutated reviews get 200 or 4xx, never 5xx or a drop", "[hostile][net]") {
  Server s;
  json base = json::parse(test::ReviewJson(kPod, "team-a"));
  base["request"]["object"]["spec"]["volumes"] =
      json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Gi"}}}}});
  base["request"]["object"]["spec"]["containers"][0]["env"] =
      json::array({{{"name", "PET_NPROC_PER_NODE"}, {"value", "4"}}});
  std::mt19937 rng(20261122);
  TlsConnection c(s.port(), s.ca);
  REQUIRE(c.ok());
  std::map<int, int> statuses;
  for (int i = 0; i < 3000; ++i) {
    json mutated = Mutate(base, rng);
    auto reply = c.Post("/mutate", mutated.dump());
    REQUIRE(reply.status != 0);  // the connection was not dropped
    ++statuses[reply.status];
    CHECK(reply.status < 500);
    if (reply.status == 200) {
      json response = json::parse(reply.body)["response"];
      if (response.contains("patch")) {  // the patch applies to what was sent
        CHECK_NOTHROW(mutated["request"]["object"].patch(json::parse(test::DecodeBase64(response["patch"]))));
      }
    }
  }
  CHECK(statuses[200] > 1000);
  CHECK(statuses[400] > 10);
}

}  // namespace
}  // namespace shmguard::server
