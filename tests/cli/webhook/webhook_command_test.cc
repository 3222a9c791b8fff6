// `shmguard-webhook` (webhook_command.cc) as a process: startup failures, SIGTERM with a request in flight, JSON logs.
#include <httplib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::test {
namespace {

using nlohmann::json;

const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
  "shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"160Mi"}},"spec":{"containers":[{"name":"t",
  "resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";

std::vector<std::string> ServeArgs(const TempDir& dir, int port, int metrics_port) {
  return {"--tls-cert-file", dir.File("tls.crt"),  "--tls-key-file", dir.File("tls.key"),
          "--port",          std::to_string(port), "--metrics-port", std::to_string(metrics_port),
          "--bind-address",  "127.0.0.1"};
}

// Resident memory of process `pid` in KiB (/proc/PID/status VmRSS).
long RssKiB(pid_t pid) {
  std::istringstream status(test::ReadText("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// 10,000 connections to each port that send a random prefix — TLS records or HTTP heads that go
// nowhere — and vanish: the server's memory afterwards is within 10 % of what it was before.
TEST_CASE("drill: 20,000 garbage connections leave the server's memory where it was", "[serve][net]") {
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  int port = FreePort(), mport = FreePort();
  Process p(ServeArgs(dir, port, mport), dir.File("log"));
  REQUIRE(WaitReady(mport, 10));
  // Warm up: what a serving process holds after real requests on both ports.
  for (int i = 0; i < 200; ++i) {
    TlsConnection c(port, dir.File("ca.crt"));
    REQUIRE(c.Post("/mutate", ReviewJson(kPod, "team-a")).status == 200);
    httplib::Client m("127.0.0.1", mport);
    REQUIRE(m.Get("/metrics"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long before = RssKiB(p.pid());
  REQUIRE(before > 0);
  std::mt19937 rng(20261124);
  const std::string heads[] = {"POST /mutate HTTP/1.1\r\nContent-Length: 99999\r\n\r\n",
                               "GET /metrics HTTP/1.1\r\nX: ", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"};
  for (int target : {port, mport}) {
    for (int i = 0; i < 10000; ++i) {
      int fd = ConnectLoopback(target);
      REQUIRE(fd >= 0);
      std::string prefix = heads[i % 3];
      prefix.resize(prefix.size() + rng() % 2048);
      for (size_t k = heads[i % 3].size(); k < prefix.size(); ++k) prefix[k] = static_cast<char>(rng());
      (void)!::send(fd, prefix.data(), prefix.size(), MSG_NOSIGNAL);
      if (i % 2) {  // half vanish with a reset, half with a FIN
        linger l{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
      ::close(fd);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const long after = RssKiB(p.pid());
  WARN("serve RSS before 20,000 garbage connections: " << before << " KiB, after: " << after << " KiB");
  if (test::kMemoryBounds) CHECK(after <= before * 11 / 10);  // the sanitizers keep freed memory
  // And it still serves both ports.
  CHECK(TlsConnection(port, dir.File("ca.crt")).Post("/mutate", ReviewJson(kPod, "team-a")).status == 200);
  CHECK(WaitReady(mport, 2));
  p.Signal(SIGTERM);
  CHECK(p.Wait(15) == 0);
}

// Peak resident memory of process `pid` in KiB (/proc/PID/status VmHWM).
long PeakKiB(pid_t pid) {
  std::istringstream status(test::ReadText("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A pod of one GPU container launching `sh -c ARGS` with `env`.
std::string HostileReview(const std::string& args, const json& env) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "hostile"}}},
              {"spec",
               {{"containers",
                 {{{"name", "v"},
                   {"command", {"sh", "-c"}},
                   {"args", {args}},
                   {"env", env},
                   {"resources", {{"limits", {{"nvidia.com/gpu", 8}, {"memory", "64Gi"}}}}}}}}}}};
  return ReviewJson(pod.dump(), "team-a");
}

// What one tenant's pod can make the webhook do, on one event loop: a launch that would expand to
// 1.25 GB, 20,000 env entries with 250,000 references, 800,000 unclosed references. Each is
// answered, a small review behind each is answered within a second, and the process stays within
// the chart's 128Mi memory limit.
TEST_CASE("serve answers reviews built to be slow or large, within its memory limit", "[serve][net]") {
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  int port = FreePort(), mport = FreePort();
  std::vector<std::string> args = ServeArgs(dir, port, mport);
  args.push_back("--threads");
  args.push_back("1");
  Process p(args, dir.File("log"));
  REQUIRE(WaitReady(mport, 10));
  std::string bomb = "vllm serve m";
  for (int i = 0; i < 25000; ++i) bomb += " $X";
  json env = json::array({{{"name", "X"}, {"value", std::string(50000, 'x')}}});
  std::string many_refs = "vllm serve m";
  for (int i = 0; i < 250000; ++i) many_refs += " $V" + std::to_string(i % 20000);
  json many_env = json::array();
  for (int i = 0; i < 20000; ++i) many_env.push_back({{"name", "V" + std::to_string(i)}, {"value", "1"}});
  std::string unclosed = "vllm serve m -tp 8 ";
  for (int i = 0; i < 800000; ++i) unclosed += "$(";
  const std::string reviews[] = {HostileReview(bomb, env), HostileReview(many_refs, many_env),
                                 HostileReview(unclosed, json::array())};
  for (const auto& review : reviews) {
    CAPTURE(review.size());
    // Catch2's assertions are for one thread: the other thread only keeps what it got.
    std::atomic<int> slow_status{0};
    std::thread slow([&] {
      TlsConnection c(port, dir.File("ca.crt"));
      slow_status = c.Post("/mutate", review).status;
    });
    // The small review behind it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto start = std::chrono::steady_clock::now();
    CHECK(TlsConnection(port, dir.File("ca.crt")).Post("/mutate", ReviewJson(kPod, "team-a")).status == 200);
    const auto waited = std::chrono::steady_clock::now() - start;
    slow.join();
    CHECK(slow_status == 200);
    CHECK(waited < std::chrono::seconds(1) * kSlowdown);
  }
  const long peak = PeakKiB(p.pid());
  WARN("serve's peak RSS after the hostile reviews: " << peak << " KiB");
  if (test::kMemoryBounds) CHECK(peak < 128 * 1024);  // the sanitizers' own memory
  p.Signal(SIGTERM);
  CHECK(p.Wait(15) == 0);
}

// A tenant's pod holds the webhook's connections (idle TLS, then raw connects for 2 s), as the
// chart's old 512 cap let one client lock out the API server. Another peer's reviews, each on a
// new connection as a fresh API server connection would be, are all answered meanwhile, their
// p99 within twice their usual p99, and the process stays inside the chart's 128 MiB limit.
TEST_CASE("hostile: one peer holding the webhook's connections cannot keep another's reviews out", "[serve][net]") {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  int port = FreePort(), mport = FreePort();
  auto args = ServeArgs(dir, port, mport);
  args.insert(args.end(), {"--max-connections", "512"});
  Process p(args, dir.File("log"));
  REQUIRE(WaitReady(mport, 10));
  const std::string review = ReviewJson(kPod, "team-a");
  auto review_ms = [&] {
    const auto start = std::chrono::steady_clock::now();
    TlsConnection c(port, dir.File("ca.crt"));
    const int status = c.ok() ? c.Post("/mutate", review).status : 0;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return std::make_pair(status, ms);
  };
  std::vector<double> usual;
  for (int i = 0; i < 100; ++i) {
    auto [status, ms] = review_ms();
    REQUIRE(status == 200);
    usual.push_back(ms);
  }
  std::sort(usual.begin(), usual.end());
  const double p99 = usual[98];

  // The tenant, from another loopback address: the cap in idle TLS connections.
  std::vector<std::unique_ptr<TlsConnection>> held;
  for (int i = 0; i < 512; ++i)
    held.push_back(std::make_unique<TlsConnection>(port, dir.File("ca.crt"), 0, "", "", "127.0.0.2"));
  // Then raw connections, as fast as one thread opens them, for 2 s.
  std::atomic<bool> flooding{true};
  std::vector<int> raw;
  std::thread flood([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < end && raw.size() < 20000) {
      int fd = ConnectLoopback(port, "127.0.0.2");
      if (fd >= 0) raw.push_back(fd);
      // A connect every 250 µs at most (8,000 in 2 s): the client, the flood and the server
      // share this machine's cores, which a tenant's pod and the webhook do not.
      std::this_thread::sleep_for(std::chrono::microseconds(250));
    }
    flooding = false;
  });
  std::vector<double> during;
  long peak_kib = 0;
  while (flooding) {
    auto [status, ms] = review_ms();
    CHECK(status == 200);
    during.push_back(ms);
    peak_kib = std::max(peak_kib, RssKiB(p.pid()));
  }
  flood.join();
  peak_kib = std::max(peak_kib, RssKiB(p.pid()));
  for (int fd : raw) ::close(fd);
  held.clear();
  CAPTURE(p99, raw.size(), peak_kib);
  REQUIRE(during.size() >= 5);
  std::sort(during.begin(), during.end());
  // Every one answered, the slowest within a scheduling delay on a shared core: none waited for
  // a connection the flood held (kube-apiserver's webhook timeout is seconds). How much the
  // flood slows them is a benchmark's question (bench/results/2026-11-29-idle-connections.md):
  // their p99 against the usual one moved with whatever else ran on the machine.
  WARN("reviews during the flood: p99 " << during[during.size() * 99 / 100] << " ms, usually " << p99 << " ms");
  CHECK(during.back() <= 100 * test::kSlowdown);
  // Under a sanitizer the process holds its shadow memory and keeps what it frees: no bound.
  if (test::kMemoryBounds) CHECK(peak_kib < 128 * 1024);
  httplib::Client m("127.0.0.1", mport);
  auto metrics = m.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("shmguard_webhook_connections_closed_total{reason=\"peer_share\"} 0") == std::string::npos);
  WARN("usual p99 " << p99 << " ms; during the flood: " << during.size() << " reviews, p50 "
                    << during[during.size() / 2] << " p99 " << during[during.size() * 99 / 100] << " worst "
                    << during.back() << " ms; " << raw.size() << " raw connections; peak RSS " << peak_kib / 1024
                    << " MiB");
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
  missing[1] = dir.File("nope.crt");
  std::vector<std::string> mismatched = args;
  mismatched[1] = dir.File("b.crt");
  const Case cases[] = {
      {missing, "nope.crt: cannot open: No such file or directory"},
      {mismatched, "the private key does not match the certificate"},
      {with({"--config", dir.File("bad.yaml")}), "bad.yaml:1: hostIPC: must be one of auto, always, never"},
      {with({"--config", dir.File("absent.yaml")}), "absent.yaml: cannot open"},
      // kube-apiserver keeps an idle connection 90 s: closing it sooner loses reviews.
      {with({"--keep-alive-seconds", "10"}), "--keep-alive-seconds: must be above 90"},
      {with({"--keep-alive-seconds", "90"}), "--keep-alive-seconds: must be above 90"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    Process p(c.args, dir.File("log"));
    CHECK(p.Wait(10) == 2);
    CHECK_THAT(test::ReadText(dir.File("log")), Catch::Contains(c.message));
  }
  Process no_tls({"--port", "0"}, dir.File("log"));
  CHECK(no_tls.Wait(10) == 2);
  CHECK_THAT(test::ReadText(dir.File("log")), Catch::Contains("--tls-cert-file is required"));

  Process first(args, dir.File("first.log"));
  REQUIRE(WaitReady(mport, 10));
  Process second(args, dir.File("log"));
  CHECK(second.Wait(10) == 2);
  CHECK_THAT(test::ReadText(dir.File("log")), Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(port)));
  first.Signal(SIGTERM);
  CHECK(first.Wait(15) == 0);
}

TEST_CASE("serve finishes the request in flight on SIGTERM, exits 0, and logs JSON lines", "[serve][net]") {
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

  std::istringstream log(test::ReadText(dir.File("log")));
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

namespace shmguard::test {
namespace {

TEST_CASE("drill: SIGTERM under load answers every request sent on an open connection, then exits 0", "[serve][net]") {
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  int port = FreePort(), mport = FreePort();
  Process p(ServeArgs(dir, port, mport), dir.File("log"));
  REQUIRE(WaitReady(mport, 10));
  std::atomic<int> answered{0}, lost{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0;; ++i) {
        TlsConnection c(port, dir.File("ca.crt"));
        if (!c.ok()) return;  // no longer accepting
        // As the API server's client does: a connection is used until an answer says
        // Connection: close. A request that gets no answer is lost, on a reused connection as on
        // a fresh one (a client does not resend a POST it wrote: the pod would go unpatched).
        for (int k = 0; k < 20; ++k) {
          std::string body = ReviewJson(kPod, "team-a", "CREATE", "Pod", std::to_string(t) + "-" + std::to_string(i));
          auto reply = c.Post("/mutate", body);
          if (reply.status != 200) {
            ++lost;
            return;
          }
          ++answered;
          if (reply.headers["connection"] == "close") break;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  p.Signal(SIGTERM);
  for (auto& c : clients) c.join();
  CHECK(p.Wait(15) == 0);
  CHECK(answered > 100);
  CHECK(lost == 0);
}

TEST_CASE("drill: the config replaced by garbage under load keeps the last good policy", "[serve][net]") {
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  std::ofstream(dir.File("policy.yaml")) << "namespaces:\n  - {match: [\"*\"], mode: enforce}\n";
  int port = FreePort(), mport = FreePort();
  auto args = ServeArgs(dir, port, mport);
  args.insert(args.end(), {"--config", dir.File("policy.yaml"), "--reload-interval-ms", "50"});
  Process p(args, dir.File("log"));
  REQUIRE(WaitReady(mport, 10));
  std::atomic<bool> done{false};
  std::atomic<int> failed{0}, sent{0};
  std::thread load([&] {
    TlsConnection c(port, dir.File("ca.crt"));
    while (!done) {
      auto reply = c.Post("/validate", ReviewJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},
        "spec":{"containers":[{"name":"t","resources":{"limits":{"nvidia.com/gpu":1}}}]}})",
                                                  "team-a"));
      ++sent;
      // enforce + requireAnnotations is not set: allowed; what matters is a 200 every time
      if (reply.status != 200) ++failed;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::ofstream(dir.File("policy.yaml")) << "\x01\x02 not: [yaml\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  done = true;
  load.join();
  CHECK(sent > 20);
  CHECK(failed == 0);
  httplib::Client metrics("127.0.0.1", mport);
  auto m = metrics.Get("/metrics");
  REQUIRE(m);
  CHECK_THAT(m->body, Catch::Contains("shmguard_config_reloads_total{result=\"failed\"} 1"));
  p.Signal(SIGTERM);
  CHECK(p.Wait(15) == 0);
  CHECK_THAT(test::ReadText(dir.File("log")), Catch::Contains("config reload failed; keeping the last good policy"));
}

}  // namespace
}  // namespace shmguard::test
