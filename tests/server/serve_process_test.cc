// `shmguard serve` as a process: startup failures, SIGTERM with a request in flight, JSON logs.
#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "io/manifests.h"
#include "server/tls_fixture.h"

namespace shmguard::test {
namespace {

using nlohmann::json;

const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
  "shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"160Mi"}},"spec":{"containers":[{"name":"t",
  "resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";

std::string Slurp(const std::string& path) {
  auto text = io::ReadFileText(path);
  return text ? *text : std::string();
}

std::vector<std::string> ServeArgs(const TempDir& dir, int port, int metrics_port) {
  return {"serve", "--tls-cert-file", dir.File("tls.crt"), "--tls-key-file", dir.File("tls.key"),
          "--port", std::to_string(port), "--metrics-port", std::to_string(metrics_port),
          "--bind-address", "127.0.0.1"};
}

TEST_CASE("serve exits non-zero with a clear message when it cannot start", "[serve][net]") {
  TempDir dir;
  IssueCert(dir.path(), "a", dir.File("tls.crt"), dir.File("tls.key"));
  IssueCert(dir.path(), "b", dir.File("b.crt"), dir.File("b.key"));
  std::ofstream(dir.File("bad.yaml")) << "hostIPC: sometimes\n";
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  int port = FreePort(), mport = FreePort();
  auto args = ServeArgs(dir, port, mport);
  auto with = [&](std::vector<std::string> extra) {
    auto a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  std::vector<std::string> missing = args;
  missing[2] = dir.File("nope.crt");
  std::vector<std::string> mismatched = args;
  mismatched[2] = dir.File("b.crt");
  const Case cases[] = {
      {missing, "nope.crt: cannot read: No such file or directory"},
      {mismatched, "the private key does not match the certificate"},
      {with({"--config", dir.File("bad.yaml")}), "bad.yaml:1: hostIPC: must be one of auto, always, never"},
      {with({"--config", dir.File("absent.yaml")}), "absent.yaml: cannot open"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    Process p(c.args, dir.File("log"));
    CHECK(p.Wait(10) == 2);
    CHECK_THAT(Slurp(dir.File("log")), Catch::Contains(c.message));
  }
  Process no_tls({"serve", "--port", "0"}, dir.File("log"));
  CHECK(no_tls.Wait(10) == 2);
  CHECK_THAT(Slurp(dir.File("log")), Catch::Contains("--tls-cert-file is required"));

  Process first(args, dir.File("first.log"));
  REQUIRE(WaitReady(mport, 10));
  Process second(args, dir.File("log"));
  CHECK(second.Wait(10) == 2);
  CHECK_THAT(Slurp(dir.File("log")), Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(port)));
  first.Signal(SIGTERM);
  CHECK(first.Wait(15) == 0);
}

TEST_CASE("serve finishes the request in flight on SIGTERM and exits 0; logs are JSON lines", "[serve][net]") {
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  int port = FreePort(), mport = FreePort();
  auto args = ServeArgs(dir, port, mport);
  args.insert(args.end(), {"--log-format", "json"});
  Process p(args, dir.File("log"));
  REQUIRE(WaitReady(mport, 10));

  TlsConnection c(port, dir.File("ca.crt"));
  REQUIRE(c.ok());
  std::string body = ReviewJson(kPod, "team-a", "CREATE", "Pod", "in-flight");
  std::string head = "POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n";
  REQUIRE(c.Write(head + body.substr(0, body.size() / 2)));  // the request is in flight
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  p.Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(c.Write(body.substr(body.size() / 2)));
  auto reply = c.Read();
  CHECK(reply.status == 200);
  CHECK(json::parse(reply.body)["response"]["uid"] == "in-flight");
  CHECK(p.Wait(15) == 0);
  CHECK_FALSE(TlsConnection(port, dir.File("ca.crt")).ok());  // no longer accepting

  std::istringstream log(Slurp(dir.File("log")));
  int lines = 0, decisions = 0;
  for (std::string line; std::getline(log, line);) {
    CAPTURE(line);
    json j = json::parse(line);  // every line is one JSON object
    CHECK(j.contains("ts"));
    CHECK(j.contains("level"));
    if (j["msg"] == "admission") {
      ++decisions;
      CHECK(j["uid"] == "in-flight");
      CHECK(j["kind"] == "Pod");
      CHECK(j["object"] == "team-a/p");
      CHECK(j["operation"] == "CREATE");
      CHECK(j["verdict"] == "patch");
      CHECK(j["required"] == "14078Mi");
      CHECK(j["latency_us"].is_number_integer());
    }
    ++lines;
  }
  CHECK(decisions == 1);
  CHECK(lines >= 4);  // serving, admission, stopping, stopped
}

}  // namespace
}  // namespace shmguard::test
