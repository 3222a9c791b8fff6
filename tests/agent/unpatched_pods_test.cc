// UnpatchedPods: kept from the informer's pods, each told once, counted per namespace.
#include "agent/unpatched_pods.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace shmguard::agent {
namespace {

using nlohmann::json;

json Pod(const std::string& uid, const std::string& ns, const std::string& phase) {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-)" + uid + R"(","namespace":")" + ns +
                     R"(","uid":")" + uid + R"(","annotations":{"shmguard.io/num-workers":"8",
    "shmguard.io/batch-bytes":"160Mi"}},"spec":{"containers":[{"name":"t","resources":{"limits":{
    "nvidia.com/gpu":4,"memory":"64Gi"}}}]},"status":{"phase":")" +
                     phase + R"("}})");
}

TEST_CASE("UnpatchedPods tells each pod once, counts them per namespace, and forgets the ended", "[unpatched_pods]") {
  Policy policy;
  UnpatchedPods u(policy);
  u.Update(Pod("a", "ml", "Running"));
  u.Update(Pod("b", "ml", "Pending"));
  u.Update(Pod("c", "team-a", "Running"));
  u.Update(Pod("a", "ml", "Running"));  // again: not told twice
  auto told = u.TakeNew();
  CHECK(told.size() == 3);
  CHECK(u.TakeNew().empty());
  std::ostringstream out;
  u.Collect(out);
  CHECK_THAT(out.str(), Catch::Contains("shmguard_unpatched_pods{namespace=\"ml\"} 2\n"));
  CHECK_THAT(out.str(), Catch::Contains("shmguard_unpatched_pods{namespace=\"team-a\"} 1\n"));
  CHECK_THAT(
      out.str(),
      Catch::Contains("shmguard_pod_shm_unpatched_required_bytes{namespace=\"ml\",pod=\"p-a\",policy_made=\"false\"} " +
                      std::to_string(14078LL << 20)));
  u.Update(Pod("a", "ml", "Succeeded"));
  u.Remove(Pod("b", "ml", "Running"));
  CHECK(u.size() == 1);
}

}  // namespace
}  // namespace shmguard::agent
