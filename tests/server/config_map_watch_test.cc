// ConfigMapWatch: ConfigMaps listed (with the label selector) into the snapshot the admission
// path reads, only what a launch can read kept; and HandleAdmission sizing a vLLM pod from the
// --config file one of them mounts.
#include "server/config_map_watch.h"

#include <catch2/catch.hpp>
#include <memory>

#include "kube/fake_api.h"
#include "server/admission_handler.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

TEST_CASE("ConfigMapWatch keeps the ConfigMaps a launch can read, and the webhook reads a --config file from them",
          "[config_map_watch][net]") {
  std::string selector;
  test::FakeApi api(
      [&](const test::FakeRequest& r, size_t) {
        test::FakeAnswer a;
        if (r.watch) {
          a.silence = std::chrono::milliseconds(30000);
          return a;
        }
        selector = r.param("labelSelector");
        json serve = {{"metadata", {{"namespace", "ml"}, {"name", "serve"}, {"resourceVersion", "5"}}},
                      {"data", {{"serve.yaml", "tensor-parallel-size: 2\nkv-offloading-size: 8\n"}}}};
        json big = {{"metadata", {{"namespace", "ml"}, {"name", "dashboards"}, {"resourceVersion", "5"}}},
                    {"data", {{"dashboard.json", std::string(100'000, 'x')}}}};
        a.body = json{{"kind", "ConfigMapList"},
                      {"metadata", {{"resourceVersion", "5"}}},
                      {"items", json::array({serve, big})}}
                     .dump();
        return a;
      },
      "/api/v1/configmaps");
  auto client = std::make_shared<kube::KubeClient>(api.Config(), 1000, 100);
  ConfigMapWatch watch(client, "shmguard.io/read=true");
  CHECK_FALSE(watch.NotReadyReason().empty());
  watch.Start();
  REQUIRE(test::Eventually([&] { return watch.synced(); }));
  CHECK(watch.NotReadyReason().empty());
  const auto snapshot = watch.Snapshot();
  watch.Stop();
  CHECK(selector == "shmguard.io/read=true");
  REQUIRE(snapshot->Find("ml", "serve") != nullptr);
  CHECK(snapshot->Find("ml", "dashboards") == nullptr);  // nothing in it a launch reads

  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
    "volumes":[{"name":"cfg","configMap":{"name":"serve"}}],
    "containers":[{"name":"vllm","command":["vllm","serve","m","--config","/etc/vllm/serve.yaml"],
      "volumeMounts":[{"name":"cfg","mountPath":"/etc/vllm"}],
      "resources":{"limits":{"nvidia.com/gpu":8,"memory":"512Gi"}}}]}})";
  const std::string review = test::ReviewJson(pod, "ml");
  auto route = MatchAdmissionRoute("/mutate", "/mutate");
  REQUIRE(route);
  const Policy policy;
  auto required = [&](const ConfigMapIndex* maps) {
    AdmissionExchange x = HandleAdmission({review}, *route, {.policy = policy, .config_maps = maps});
    REQUIRE(x.status == 200);
    return x.required_bytes;
  };
  // The file's 8 GiB offload region is counted with the ConfigMap, not without it.
  CHECK(required(snapshot.get()) > int64_t{8} << 30);
  CHECK(required(nullptr) < int64_t{8} << 30);
}

}  // namespace
}  // namespace shmguard::server
