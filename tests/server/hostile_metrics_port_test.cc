// Hostile clients against the metrics port on loopback: idle, slowloris and held connections
// never turn the kubelet's probes away, and request kinds never grow /metrics.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/hostile_fixture.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using hostile_test::kPod;
using hostile_test::RaiseFdLimit;
using hostile_test::Server;
using nlohmann::json;
using test::TlsConnection;
using Clock = std::chrono::steady_clock;

// A GET over plain TCP on `fd`: the status of the answer, 0 when none came.
int PlainGet(int fd, const std::string& path) {
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return 0;
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return 0;
    got.append(buf, static_cast<size_t>(n));
  }
  return got.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(got.substr(9, 3)) : 0;
}

TEST_CASE("hostile: 512 idle and 256 slowloris connections on the metrics port never delay the probes",
          "[hostile][net]") {
  RaiseFdLimit();
  Server s;
  const int port = s.server->metrics_port();
  std::vector<int> idle, slow;
  for (int i = 0; i < 512; ++i) {
    idle.push_back(test::ConnectLoopback(port));
    REQUIRE(idle.back() >= 0);
  }
  for (int i = 0; i < 256; ++i) {
    slow.push_back(test::ConnectLoopback(port));
    REQUIRE(slow.back() >= 0);
  }
  const std::string dribble = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n";
  double worst_ms = 0;
  for (int step = 0; step < 4; ++step) {  // a byte every 500 ms on each slow connection
    for (int fd : slow) (void)!::write(fd, &dribble[static_cast<size_t>(step)], 1);
    for (const char* path : {"/readyz", "/healthz"}) {
      auto start = Clock::now();
      int fd = test::ConnectLoopback(port);
      REQUIRE(fd >= 0);
      CHECK(PlainGet(fd, path) == 200);
      ::close(fd);
      worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    CHECK(TlsConnection(s.port(), s.ca).Post("/mutate", test::ReviewJson(kPod, "team-a")).status == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  INFO("slowest probe: " << worst_ms << " ms");
  CHECK(worst_ms < 1000 * test::kSlowdown);
  // Idle connections are closed after the port's keep-alive (5 s): EOF, not the 10 s read timeout.
  auto start = Clock::now();
  char byte;
  CHECK(::read(idle.front(), &byte, 1) == 0);
  CHECK(Clock::now() - start < std::chrono::seconds(7));
  for (int fd : idle) ::close(fd);
  for (int fd : slow) ::close(fd);
}

// Every distinct request kind used to be a /metrics series kept for the life of the process:
// 200 posts with 1 MB kinds made /metrics 200 MB. The kind label is now one of the table's kinds,
// "" or "other".
TEST_CASE("hostile: reviews with 200 distinct 64 KB kinds add one metric series, not 200", "[hostile][net]") {
  Server s;
  TlsConnection c(s.port(), s.ca);
  REQUIRE(c.ok());
  json unknown = json::parse(test::ReviewJson(kPod, "team-a"));
  unknown["request"]["kind"]["kind"] = "Unknown";
  REQUIRE(c.Post("/mutate", unknown.dump()).status == 200);  // the endpoint's series, and "other"'s
  httplib::Client metrics("127.0.0.1", s.server->metrics_port());
  auto before = metrics.Get("/metrics");
  REQUIRE(before);
  for (int i = 0; i < 200; ++i) {
    json review = json::parse(test::ReviewJson(kPod, "team-a"));
    review["request"]["kind"]["kind"] = std::to_string(i) + std::string(64 << 10, 'K');
    auto reply = c.Post("/mutate", review.dump());
    CHECK(reply.status == 200);
  }
  auto after = metrics.Get("/metrics");
  REQUIRE(after);
  CHECK(after->body.size() < before->body.size() + 64);  // the counts' digits
  CHECK_THAT(
      after->body,
      Catch::Contains(R"(shmguard_admission_requests_total{endpoint="mutate",kind="other",decision="allowed"} 201)"));
  CHECK(after->body.find("KKKK") == std::string::npos);
}

// The metrics port takes at most 4,096 connections; a client that holds them all, idle or
// dribbling a request, used to make the kubelet's probes fail (their connections refused) for
// as long as it reconnected. Past the cap, a new connection closes the quietest one instead.
TEST_CASE("hostile: 4,096 held connections on the metrics port never turn a probe away", "[hostile][net]") {
  RaiseFdLimit();
  Server s;
  const int port = s.server->metrics_port();
  std::vector<int> held;
  for (int i = 0; i < 4096 + 64; ++i) {  // past the cap
    int fd = test::ConnectLoopback(port);
    REQUIRE(fd >= 0);
    if (i % 2) (void)!::write(fd, "GET /metrics HTTP/1.1\r\n", 23);  // half of them mid-request
    held.push_back(fd);
  }
  for (int round = 0; round < 5; ++round) {
    for (const char* path : {"/healthz", "/readyz"}) {
      CAPTURE(round, path);
      int fd = test::ConnectLoopback(port);
      REQUIRE(fd >= 0);
      CHECK(PlainGet(fd, path) == 200);
      ::close(fd);
    }
    // The holder reconnects what was closed, as a client that wants to keep them does.
    for (int& fd : held) {
      char byte;
      if (::recv(fd, &byte, 1, MSG_DONTWAIT) == 0) {
        ::close(fd);
        fd = test::ConnectLoopback(port);
        REQUIRE(fd >= 0);
      }
    }
  }
  for (int fd : held) ::close(fd);
}

}  // namespace
}  // namespace shmguard::server
