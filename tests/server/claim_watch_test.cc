// ClaimWatch: ResourceClaims and ResourceClaimTemplates listed and watched into the snapshot the
// admission path reads, and HandleAdmission counting a pod's GPUs from it.
#include "server/claim_watch.h"

#include <catch2/catch.hpp>
#include <memory>

#include "kube/fake_api.h"
#include "server/admission_handler.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

json Template(const std::string& ns, const std::string& name, int64_t gpus) {
  return {
      {"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", "5"}}},
      {"spec",
       {{"spec",
         {{"devices",
           {{"requests", json::array({{{"name", "g"},
                                       {"exactly", {{"deviceClassName", "gpu.nvidia.com"}, {"count", gpus}}}}})}}}}}}}};
}

// Both collections through one fake API server: the templates' list has one, the claims' none;
// each watch then stays open and silent.
TEST_CASE("ClaimWatch follows the API server's claim templates, and Stop closes both watches and joins",
          "[claim_watch][net]") {
  test::FakeApi api(
      [](const test::FakeRequest& r, size_t) {
        test::FakeAnswer a;
        if (r.watch) {
          a.silence = std::chrono::milliseconds(30000);
          return a;
        }
        json items = json::array();
        json list = {{"metadata", {{"resourceVersion", "5"}}}};
        if (r.path == kResourceClaimTemplatesPath) {
          json t = Template("ml", "four", 4);
          t["apiVersion"] = "resource.k8s.io/v1";  // a list's items carry no kind: the list says it
          items.push_back(t);
          list["kind"] = "ResourceClaimTemplateList";
        } else {
          list["kind"] = "ResourceClaimList";
        }
        list["items"] = items;
        a.body = list.dump();
        return a;
      },
      "/apis/resource.k8s.io/v1/.*");
  auto client = std::make_shared<kube::KubeClient>(api.Config(), 1000, 100);
  ClaimWatch watch(client);
  CHECK_FALSE(watch.NotReadyReason().empty());
  watch.Start();
  REQUIRE(test::Eventually([&] { return watch.synced(); }));
  CHECK(watch.NotReadyReason().empty());
  const auto snapshot = watch.Snapshot();
  const auto start = std::chrono::steady_clock::now();
  watch.Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  // A list's items have no kind of their own: the index must still know the template.
  REQUIRE(snapshot->Find("ml", "ResourceClaimTemplate", "four") != nullptr);
  CHECK(ClaimGpus(*snapshot->Find("ml", "ResourceClaimTemplate", "four"), Policy{}.gpu_device_classes) == 4);
}

}  // namespace
}  // namespace shmguard::server
