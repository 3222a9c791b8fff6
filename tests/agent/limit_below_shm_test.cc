// LimitBelowShmPods: the pods whose memory limit no longer holds their /dev/shm, kept from the
// informer's pods, each told once, with how far each limit is short.
#include "agent/limit_below_shm.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace shmguard::agent {
namespace {

using nlohmann::json;

// A patched pod with a 16Gi /dev/shm and memory limit `limit`.
json Pod(const std::string& uid, const std::string& ns, const std::string& limit, const std::string& phase) {
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{}},
    "spec":{"containers":[{"name":"t","resources":{"limits":{"nvidia.com/gpu":4}},
      "volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}],
      "volumes":[{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"16Gi"}}]},"status":{}})");
  pod["metadata"]["name"] = "p-" + uid;
  pod["metadata"]["namespace"] = ns;
  pod["metadata"]["uid"] = uid;
  pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = limit;
  pod["status"]["phase"] = phase;
  return pod;
}

TEST_CASE("LimitBelowShmPods tells each pod once, says how far its limit is short, forgets the fixed and ended",
          "[limit_below_shm]") {
  Policy policy;  // maxFractionOfMemoryLimit 0.5: 16Gi of /dev/shm needs a 32Gi limit
  LimitBelowShmPods pods(policy);
  pods.Update(Pod("a", "ml", "20Gi", "Running"));
  pods.Update(Pod("b", "ml", "64Gi", "Running"));  // it fits
  pods.Update(Pod("c", "team-a", "24Gi", "Pending"));
  pods.Update(Pod("a", "ml", "20Gi", "Running"));  // again: not told twice
  auto told = pods.TakeNew();
  REQUIRE(told.size() == 2);
  CHECK(told[0].name == "p-a");
  CHECK(told[0].value.check == Check::kResizeBelowShm);
  CHECK(pods.TakeNew().empty());
  std::ostringstream out;
  pods.Collect(out);
  CHECK_THAT(out.str(), Catch::Contains("shmguard_pods_memory_limit_below_shm{namespace=\"ml\"} 1\n"));
  CHECK_THAT(out.str(), Catch::Contains("shmguard_pods_memory_limit_below_shm{namespace=\"team-a\"} 1\n"));
  CHECK_THAT(out.str(), Catch::Contains("shmguard_pod_memory_limit_below_shm_bytes{namespace=\"ml\",pod=\"p-a\","
                                        "volume=\"dshm\"} " +
                                        std::to_string(12LL << 30) + "\n"));
  // Resized back up: no longer one; the other ends.
  pods.Update(Pod("a", "ml", "32Gi", "Running"));
  pods.Update(Pod("c", "team-a", "24Gi", "Failed"));
  CHECK(pods.size() == 0);
  // Shrunk again: told again.
  pods.Update(Pod("a", "ml", "20Gi", "Running"));
  CHECK(pods.TakeNew().size() == 1);
  pods.Remove(Pod("a", "ml", "20Gi", "Running"));
  CHECK(pods.size() == 0);
}

}  // namespace
}  // namespace shmguard::agent
