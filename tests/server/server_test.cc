// The webhook server on loopback with real TLS: admission over HTTPS, limits, certificate
// rotation, config reload, metrics, idle connections, keep-alive.
#include "server/server.h"

#include <httplib.h>
#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "io/words/version.h"
#include "server/test_server.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using nlohmann::json;
using test::TlsConnection;

const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
  "shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"160Mi"}},"spec":{"containers":[{"name":"t",
  "resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";
// kPod with NCCL over InfiniBand: a root RDMA container, which ipcLock auto gives IPC_LOCK.
const char* kIbPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
  "shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"160Mi"}},"spec":{"containers":[{"name":"t",
  "env":[{"name":"NCCL_NET","value":"IB"}],"resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";
const char* kTooBig = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"big","annotations":{
  "shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"1Gi"}},"spec":{"containers":[{"name":"t",
  "resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";

// The test server plus the requests these tests make.
struct Fixture : test::TestServer {
  explicit Fixture(const std::string& policy_yaml = "", size_t max_body = 8 << 20)
      : test::TestServer(policy_yaml, [max_body](ServerOptions& o) { o.max_body_bytes = max_body; }) {}

  test::HttpReply Post(const std::string& path, const std::string& body, const std::string& ct = "application/json") {
    TlsConnection c(server->port(), ca);
    REQUIRE(c.ok());
    return c.Post(path, body, ct);
  }
  json Response(const std::string& path, const std::string& body) {
    auto reply = Post(path, body);
    REQUIRE(reply.status == 200);
    json review = json::parse(reply.body);
    CHECK(review["apiVersion"] == "admission.k8s.io/v1");
    CHECK(review["kind"] == "AdmissionReview");
    return review["response"];
  }
  std::string Metrics() {
    httplib::Client c("127.0.0.1", server->metrics_port());
    auto res = c.Get("/metrics");
    REQUIRE(res);
    return res->body;
  }
};

using test::Eventually;

TEST_CASE("serve: /mutate answers a patch that applies to the request object", "[server][net]") {
  Fixture f;
  json response = f.Response("/mutate?timeout=10s", test::ReviewJson(kPod, "team-a"));
  CHECK(response["uid"] == "uid-1");
  CHECK(response["allowed"] == true);
  CHECK(response["patchType"] == "JSONPatch");
  json patch = json::parse(test::DecodeBase64(response["patch"]));
  json patched = json::parse(kPod).patch(patch);
  CHECK(patched["spec"]["volumes"][0] ==
        json::parse(R"({"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"14078Mi"}})"));
  CHECK(patched["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/dev/shm");
  CHECK_FALSE(patched["spec"].contains("hostIPC"));  // nothing in one pod needs the node's IPC namespace
  CHECK_FALSE(patched["spec"]["containers"][0].contains("securityContext"));  // no RDMA: no IPC_LOCK

  // The patched pod comes back with nothing to do.
  json again = f.Response("/mutate", test::ReviewJson(patched.dump(), "team-a"));
  CHECK_FALSE(again.contains("patch"));
  CHECK_FALSE(again.contains("patchType"));
}

TEST_CASE("serve: a namespace's Pod Security level, by query or by path, keeps hostIPC and IPC_LOCK out",
          "[server][net]") {
  Fixture f("hostIPC: always\n");  // and a root RDMA container: both would come under privileged
  for (const char* route : {"/mutate?timeout=10s&podSecurity=baseline", "/mutate/pod-security/baseline",
                            "/mutate?podSecurity=restricted", "/mutate/pod-security/restricted"}) {
    CAPTURE(route);
    json response = f.Response(route, test::ReviewJson(kIbPod, "team-a"));
    CHECK(response["allowed"] == true);
    json patched = json::parse(kIbPod).patch(json::parse(test::DecodeBase64(response["patch"])));
    CHECK(patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "14078Mi");  // the volume still comes
    CHECK(patched["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/dev/shm");
    CHECK_FALSE(patched["spec"].contains("hostIPC"));
    CHECK_FALSE(patched["spec"]["containers"][0].contains("securityContext"));
    std::string level = std::string(route).find("baseline") != std::string::npos ? "baseline" : "restricted";
    CHECK_THAT(response["warnings"].dump(), Catch::Contains("hostIPC not set: Pod Security " + level + " forbids it"));
    CHECK_THAT(response["warnings"].dump(),
               Catch::Contains("IPC_LOCK not added: Pod Security " + level + " forbids it"));
    // /validate at the same level accepts what /mutate gave.
    std::string validate = std::string(route).replace(0, 7, "/validate");
    json checked = f.Response(validate, test::ReviewJson(patched.dump(), "ml-vision"));
    CHECK(checked["allowed"] == true);
  }
  // privileged is the policy's own rule: hostIPC and IPC_LOCK come.
  json privileged = f.Response("/mutate/pod-security/privileged", test::ReviewJson(kIbPod, "team-a"));
  json patched = json::parse(kIbPod).patch(json::parse(test::DecodeBase64(privileged["patch"])));
  CHECK(patched["spec"]["hostIPC"] == true);
  CHECK(patched["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
  // Unknown levels are a 400 with an AdmissionReview saying why; unknown paths a 404.
  for (const char* route : {"/mutate?podSecurity=Baseline", "/validate/pod-security/none", "/mutate?podSecurity="}) {
    CAPTURE(route);
    auto reply = f.Post(route, test::ReviewJson(kPod, "team-a"));
    CHECK(reply.status == 400);
    CHECK_THAT(reply.body, Catch::Contains("unknown Pod Security level"));
  }
  CHECK(f.Post("/mutate/baseline", test::ReviewJson(kPod, "team-a")).status == 404);
  CHECK(f.Post("/mutatex", test::ReviewJson(kPod, "team-a")).status == 404);
}

TEST_CASE("serve: /validate denies in enforce and warns in warn namespaces", "[server][net]") {
  Fixture f;
  json denied = f.Response("/validate", test::ReviewJson(kTooBig, "ml-vision"));
  CHECK(denied["allowed"] == false);
  CHECK(denied["status"]["code"] == 403);
  CHECK(denied["status"]["reason"] == "Forbidden");
  CHECK_THAT(denied["status"]["message"].get<std::string>(), Catch::Contains("memory limit 64Gi"));
  json warned = f.Response("/validate", test::ReviewJson(kTooBig, "team-a"));
  CHECK(warned["allowed"] == true);
  REQUIRE(warned["warnings"].size() >= 1);
  for (const auto& w : warned["warnings"]) CHECK(w.get<std::string>().size() <= 120);
  // A namespace labelled for enforcement is routed to /validate/enforce: denied whatever the
  // policy's rule for its name says.
  json labelled = f.Response("/validate/enforce", test::ReviewJson(kTooBig, "team-a"));
  CHECK(labelled["allowed"] == false);
  CHECK(labelled["status"]["code"] == 403);
  CHECK(f.Response("/validate/enforce/pod-security/baseline", test::ReviewJson(kPod, "team-a"))["allowed"] == false);
  CHECK(f.Response("/validate/enforce", test::ReviewJson(kTooBig, "kube-system"))["allowed"] == true);  // off
  json mutate_denied = f.Response("/mutate", test::ReviewJson(kTooBig, "ml-vision"));
  CHECK(mutate_denied["allowed"] == true);
  CHECK_FALSE(mutate_denied.contains("patch"));
}

TEST_CASE("serve: an unannotated 4-GPU pod is sized on /mutate and checked on /validate", "[server][net]") {
  const char* pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"plain"},"spec":{"containers":[
    {"name":"t","resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";
  Fixture f("namespaces:\n- {match: [gpu-*], mode: enforce}\n- {match: ['*'], mode: warn}\n");
  json mutated = f.Response("/mutate", test::ReviewJson(pod, "team-a"));
  CHECK(mutated["allowed"] == true);
  REQUIRE(mutated.contains("patch"));
  json patched = json::parse(pod).patch(json::parse(test::DecodeBase64(mutated["patch"])));
  CHECK(patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "16Gi");
  CHECK_FALSE(patched["spec"].contains("hostIPC"));
  std::string warnings = mutated["warnings"].dump();
  CHECK_THAT(warnings, Catch::Contains("sized without DataLoader annotations: 16Gi = 25% of the 64Gi memory"));

  json denied = f.Response("/validate", test::ReviewJson(pod, "gpu-a"));
  CHECK(denied["allowed"] == false);
  CHECK_THAT(denied["status"]["message"].get<std::string>(),
             Catch::Contains("/dev/shm is 64Mi (container default), below the 1Gi floor"));
  json warned = f.Response("/validate", test::ReviewJson(pod, "team-a"));
  CHECK(warned["allowed"] == true);
  CHECK_THAT(warned["warnings"].dump(), Catch::Contains("below the 1Gi floor"));
  json passes = f.Response("/validate", test::ReviewJson(patched.dump(), "gpu-a"));
  CHECK(passes["allowed"] == true);
  CHECK_FALSE(passes.contains("warnings"));
  json nothing_left = f.Response("/mutate", test::ReviewJson(patched.dump(), "gpu-a"));
  CHECK_FALSE(nothing_left.contains("patch"));
}

TEST_CASE("serve: UPDATE, DELETE, other kinds, off namespaces and dryRun", "[server][net]") {
  Fixture f;
  for (const char* op : {"UPDATE", "DELETE", "CONNECT"}) {
    json r = f.Response("/mutate", test::ReviewJson(kPod, "team-a", op));
    CHECK(r["allowed"] == true);
    CHECK_FALSE(r.contains("patch"));
  }
  json cm = f.Response("/mutate",
                       test::ReviewJson(R"({"apiVersion":"v1","kind":"ConfigMap"})", "team-a", "CREATE", "ConfigMap"));
  CHECK(cm["allowed"] == true);
  CHECK_FALSE(cm.contains("patch"));
  json off = f.Response("/mutate", test::ReviewJson(kPod, "kube-system"));
  CHECK_FALSE(off.contains("patch"));
  json review = json::parse(test::ReviewJson(kPod, "team-a"));
  review["request"]["dryRun"] = true;
  json dry = f.Response("/mutate", review.dump());
  CHECK(dry["patch"] == f.Response("/mutate", test::ReviewJson(kPod, "team-a"))["patch"]);
}

TEST_CASE("serve: bad requests get 4xx with a message, never a crash", "[server][net]") {
  Fixture f("", 64 * 1024);
  struct Case {
    std::string path, body, content_type;
    int status;
    const char* message;
  };
  const Case cases[] = {
      {"/mutate", test::ReviewJson(kPod, "a"), "text/plain", 415, "Content-Type must be application/json"},
      {"/mutate", "", "application/json", 400, "empty request body"},
      {"/mutate", "{\"apiVersion\": ", "application/json", 400, "not valid JSON"},
      {"/mutate", std::string(100000, '['), "application/json", 413, "exceeds the limit"},
      {"/mutate", std::string(5000, '[') + std::string(5000, ']'), "application/json", 400, "nested deeper than 128"},
      {"/mutate", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}})",
       "application/json", 400, "/request/uid: must be a string"},
      {"/validate", R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"})", "application/json", 400,
       "admissionReviewVersions: [v1]"},
      {"/nowhere", "{}", "application/json", 404, "POST /mutate and POST /validate"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.path, c.body.substr(0, 60), c.content_type);
    auto reply = f.Post(c.path, c.body, c.content_type);
    CHECK(reply.status == c.status);
    CHECK_THAT(reply.body, Catch::Contains(c.message));
    if (c.status == 413) continue;          // the transport refuses it before the body is read: plain text
    json review = json::parse(reply.body);  // still an AdmissionReview the API server can read
    CHECK(review["apiVersion"] == "admission.k8s.io/v1");
    CHECK(review["kind"] == "AdmissionReview");
    CHECK(review["response"]["allowed"] == false);
    CHECK(review["response"]["status"]["code"] == c.status);
  }
  TlsConnection get(f.server->port(), f.ca);
  REQUIRE(get.ok());
  get.Write("GET /mutate HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto reply = get.Read();
  CHECK(reply.status == 405);
  CHECK(reply.headers["allow"] == "POST");
  CHECK(json::parse(reply.body)["response"]["status"]["code"] == 405);
  // Still serving afterwards.
  CHECK(f.Response("/mutate", test::ReviewJson(kPod, "team-a"))["allowed"] == true);
  CHECK_THAT(f.Metrics(), Catch::Contains("shmguard_http_errors_total{code=\"415\"} 1"));
}

TEST_CASE("serve: TLS 1.3 only by default, 1.2 when allowed, 1.0 and 1.1 never", "[server][net]") {
  Fixture f;
  CHECK_FALSE(TlsConnection(f.server->port(), f.ca, TLS1_VERSION).ok());
  CHECK_FALSE(TlsConnection(f.server->port(), f.ca, TLS1_1_VERSION).ok());
  CHECK_FALSE(TlsConnection(f.server->port(), f.ca, TLS1_2_VERSION).ok());
  CHECK(TlsConnection(f.server->port(), f.ca, TLS1_3_VERSION).ok());
  test::TestServer tls12("", [](ServerOptions& o) { o.tls_min_version = TlsVersion::kTls12; });
  CHECK_FALSE(TlsConnection(tls12.port(), tls12.ca, TLS1_1_VERSION).ok());
  CHECK(TlsConnection(tls12.port(), tls12.ca, TLS1_2_VERSION).ok());
  CHECK(TlsConnection(tls12.port(), tls12.ca, TLS1_3_VERSION).ok());
}

TEST_CASE("serve: a rotated certificate reaches new connections with no failed request", "[server][net]") {
  Fixture f;
  CHECK(TlsConnection(f.server->port(), f.ca).PeerCommonName() == "first");
  std::atomic<bool> done{false};
  std::atomic<int> sent{0}, failed{0};
  std::thread load([&] {
    while (!done) {
      TlsConnection c(f.server->port(), f.ca);
      auto reply = c.Post("/mutate", test::ReviewJson(kPod, "team-a"));
      ++sent;
      if (!c.ok() || reply.status != 200) ++failed;
    }
  });
  test::IssueCert(f.dir.path(), "second", f.cert, f.key);
  CHECK(Eventually([&] { return TlsConnection(f.server->port(), f.ca).PeerCommonName() == "second"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  done = true;
  load.join();
  CHECK(sent > 5);
  CHECK(failed == 0);
  CHECK_THAT(f.Metrics(), Catch::Contains("shmguard_certificate_reloads_total{result=\"ok\"} 1"));
}

TEST_CASE("serve: a half-written or missing pair keeps the previous certificate", "[server][net]") {
  Fixture f;
  test::IssueCert(f.dir.path(), "other", f.dir.File("other.crt"), f.dir.File("other.key"));
  std::filesystem::copy_file(f.dir.File("other.crt"), f.cert, std::filesystem::copy_options::overwrite_existing);
  CHECK(Eventually([&] {
    return f.Metrics().find("shmguard_certificate_reloads_total{result=\"failed\"} 1") != std::string::npos;
  }));
  CHECK(TlsConnection(f.server->port(), f.ca).PeerCommonName() == "first");
  std::filesystem::remove(f.key);
  CHECK(Eventually([&] {
    return f.Metrics().find("shmguard_certificate_reloads_total{result=\"failed\"} 2") != std::string::npos;
  }));
  TlsConnection still(f.server->port(), f.ca);
  CHECK(still.PeerCommonName() == "first");
  CHECK(still.Post("/mutate", test::ReviewJson(kPod, "team-a")).status == 200);
  // Readiness says so, and recovers once the files load again.
  httplib::Client probe("127.0.0.1", f.server->metrics_port());
  auto not_ready = probe.Get("/readyz");
  REQUIRE(not_ready);
  CHECK(not_ready->status == 503);
  CHECK_THAT(not_ready->body, Catch::Contains("cannot open: No such file or directory") &&
                                  Catch::Contains("still serving the previous certificate"));
  test::IssueCert(f.dir.path(), "third", f.cert, f.key);
  CHECK(Eventually([&] {
    auto r = probe.Get("/readyz");
    return r && r->status == 200;
  }));
  CHECK(TlsConnection(f.server->port(), f.ca).PeerCommonName() == "third");
}

TEST_CASE("serve: config reloads on change and a broken file keeps the last good one", "[server][net]") {
  Fixture f("namespaces:\n  - {match: [\"*\"], mode: warn}\n");
  CHECK(f.Response("/validate", test::ReviewJson(kTooBig, "ml-x"))["allowed"] == true);
  test::ReplaceFile(f.config,
                    "namespaces:\n  - {match: [\"ml-*\"], mode: enforce}\n  - {match: [\"*\"], mode: warn}\n");
  CHECK(Eventually([&] { return f.Response("/validate", test::ReviewJson(kTooBig, "ml-x"))["allowed"] == false; }));
  test::ReplaceFile(f.config, "namespaces: [{match: [\"ml-*\"], mode: sometimes}]\n");
  CHECK(Eventually(
      [&] { return f.Metrics().find("shmguard_config_reloads_total{result=\"failed\"} 1") != std::string::npos; }));
  CHECK(f.Response("/validate", test::ReviewJson(kTooBig, "ml-x"))["allowed"] == false);  // still enforcing
  CHECK_THAT(f.Metrics(), Catch::Contains("shmguard_config_reloads_total{result=\"ok\"} 1"));
}

TEST_CASE("serve: health, readiness and metrics on the plain HTTP port", "[server][net]") {
  Fixture f;
  f.Response("/mutate", test::ReviewJson(kPod, "team-a"));
  f.Response("/validate", test::ReviewJson(kTooBig, "ml-a"));
  httplib::Client c("127.0.0.1", f.server->metrics_port());
  CHECK(c.Get("/healthz")->status == 200);
  CHECK(c.Get("/readyz")->status == 200);
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->get_header_value("Content-Type"), Catch::StartsWith("text/plain; version=0.0.4"));
  const std::string& m = metrics->body;
  CHECK_THAT(
      m, Catch::Contains("shmguard_admission_requests_total{endpoint=\"mutate\",kind=\"Pod\",decision=\"patched\"} 1"));
  CHECK_THAT(m, Catch::Contains(
                    "shmguard_admission_requests_total{endpoint=\"validate\",kind=\"Pod\",decision=\"denied\"} 1"));
  CHECK_THAT(m, Catch::Contains("shmguard_admission_duration_seconds_bucket{endpoint=\"mutate\",le=\"+Inf\"} 1"));
  CHECK_THAT(m, Catch::Contains("shmguard_patches_total 1"));
  CHECK_THAT(m, Catch::Contains("shmguard_denials_total 1"));
  CHECK_THAT(m, Catch::Contains(std::string("shmguard_build_info{version=\"") + io::Version() + "\"} 1"));
  const std::string not_after = "\nshmguard_certificate_not_after_seconds ";
  size_t at = m.find(not_after);
  REQUIRE(at != std::string::npos);
  CHECK(std::regex_match(m.substr(at + not_after.size(), m.find('\n', at + 1) - at - not_after.size()),
                         std::regex("1[0-9]{9}")));
}

TEST_CASE("serve: many idle keep-alive connections do not starve a new client", "[server][net]") {
  Fixture f;
  std::vector<std::unique_ptr<TlsConnection>> idle;
  for (int i = 0; i < 24; ++i) {
    idle.push_back(std::make_unique<TlsConnection>(f.server->port(), f.ca));
    REQUIRE(idle.back()->ok());
    REQUIRE(idle.back()->Post("/mutate", test::ReviewJson(kPod, "team-a")).status == 200);  // now idle
  }
  auto start = std::chrono::steady_clock::now();
  CHECK(f.Response("/mutate", test::ReviewJson(kPod, "team-a"))["allowed"] == true);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2 * test::kSlowdown));
}

TEST_CASE("serve: one connection carries many requests (no reconnect after 5)", "[server][net]") {
  Fixture f;
  TlsConnection c(f.server->port(), f.ca);
  REQUIRE(c.ok());
  for (int i = 0; i < 50; ++i) {
    auto reply = c.Post("/mutate", test::ReviewJson(kPod, "team-a", "CREATE", "Pod", "uid-" + std::to_string(i)));
    REQUIRE(reply.status == 200);
    CHECK(json::parse(reply.body)["response"]["uid"] == "uid-" + std::to_string(i));
    CHECK(reply.headers["connection"] != "close");
  }
}

// The policy file is the server's own to re-read: whatever the path becomes — a FIFO nobody
// writes, a link to /dev/zero — is a failed reload, never a stuck or dead watcher, and Stop
// (SIGTERM) still ends the server at once.
TEST_CASE("serve: a policy path that becomes a FIFO or /dev/zero is a failed reload", "[server][net]") {
  Fixture f("namespaces:\n  - {match: [\"ml-*\"], mode: enforce}\n  - {match: [\"*\"], mode: warn}\n");
  namespace fs = std::filesystem;
  fs::remove(f.config);
  REQUIRE(::mkfifo(f.config.c_str(), 0600) == 0);
  CHECK(Eventually(
      [&] { return f.Metrics().find("shmguard_config_reloads_total{result=\"failed\"} 1") != std::string::npos; }));
  fs::remove(f.config);
  fs::create_symlink("/dev/zero", f.config);
  CHECK(Eventually(
      [&] { return f.Metrics().find("shmguard_config_reloads_total{result=\"failed\"} 2") != std::string::npos; }));
  CHECK(f.Response("/validate", test::ReviewJson(kTooBig, "ml-x"))["allowed"] == false);  // the last good policy
  auto start = std::chrono::steady_clock::now();
  f.server->Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

}  // namespace
}  // namespace shmguard::server
