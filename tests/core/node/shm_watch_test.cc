// FindShmVolumes and ShmWatch: the node agent's reading of a pod and of its samples.
#include "core/node/shm_watch.h"

#include <catch2/catch.hpp>
#include <optional>

#include "core/verdict/evaluation.h"

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("FindShmVolumes finds the memory emptyDirs mounted at /dev/shm", "[shm_watch]") {
  struct Case {
    const char* name;
    const char* pod;
    std::vector<std::string> volumes;
  };
  const Case cases[] = {
      {"dshm in the container",
       R"({"spec":{"volumes":[{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}],
           "containers":[{"name":"t","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]}})",
       {"dshm"}},
      {"only an init container mounts it",
       R"({"spec":{"volumes":[{"name":"s","emptyDir":{"medium":"Memory"}}],
           "initContainers":[{"name":"i","volumeMounts":[{"name":"s","mountPath":"/dev/shm"}]}],
           "containers":[{"name":"t"}]}})",
       {"s"}},
      {"a disk emptyDir at /dev/shm",
       R"({"spec":{"volumes":[{"name":"dshm","emptyDir":{}}],
           "containers":[{"name":"t","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]}})",
       {}},
      {"a memory emptyDir elsewhere",
       R"({"spec":{"volumes":[{"name":"cache","emptyDir":{"medium":"Memory"}}],
           "containers":[{"name":"t","volumeMounts":[{"name":"cache","mountPath":"/cache"}]}]}})",
       {}},
      // The runtime cleans the path: "/dev/shm/" is /dev/shm, as the webhook reads it.
      {"mounted at /dev/shm/",
       R"({"spec":{"volumes":[{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}],
           "containers":[{"name":"t","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm/"}]}]}})",
       {"dshm"}},
      {"no spec", R"({"metadata":{"name":"p"}})", {}},
      {"volumes of the wrong type", R"({"spec":{"volumes":{"dshm":1},"containers":"x"}})", {}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    std::vector<std::string> got;
    for (const auto& v : FindShmVolumes(json::parse(c.pod))) got.push_back(v.name);
    CHECK(got == c.volumes);
  }
}

// 20,000 volumes and as many mounts are read in one pass each (it was a scan of every mount for
// every memory volume): the answer is the same, whatever the order.
TEST_CASE("FindShmVolumes reads a pod of many volumes and mounts", "[shm_watch]") {
  json pod = {
      {"spec", {{"volumes", json::array()}, {"containers", {{{"name", "t"}, {"volumeMounts", json::array()}}}}}}};
  for (int i = 0; i < 20000; ++i) {
    pod["spec"]["volumes"].push_back({{"name", "v" + std::to_string(i)}, {"emptyDir", {{"medium", "Memory"}}}});
    pod["spec"]["containers"][0]["volumeMounts"].push_back(
        {{"name", "v" + std::to_string(i)}, {"mountPath", i == 19999 ? "/dev/shm" : "/m" + std::to_string(i)}});
  }
  auto found = FindShmVolumes(pod);
  REQUIRE(found.size() == 1);
  CHECK(found[0].name == "v19999");
}

TEST_CASE("ShmWatch warns once per crossing of the threshold and keeps the peak", "[shm_watch]") {
  ShmWatch w(0.9);
  struct Step {
    uint64_t used, size;
    bool warns;
  };
  const Step steps[] = {
      {0, 0, false},     // not mounted yet: ignored
      {10, 100, false},  // 10%
      {89, 100, false},  // just below
      {90, 100, true},   // crosses
      {99, 100, false},  // still above: said once
      {87, 100, false},  // below, but within the re-arm margin
      {91, 100, false},  // so no second warning
      {84, 100, false},  // below 85%: re-armed
      {95, 100, true},   // crosses again
  };
  for (size_t i = 0; i < std::size(steps); ++i) {
    CAPTURE(i);
    CHECK(w.Observe(steps[i].used, steps[i].size) == steps[i].warns);
  }
  CHECK(w.peak() == 99);
  CHECK(w.used() == 95);
  CHECK(w.size() == 100);
  ShmWatch first(0.9);
  CHECK(first.Observe(95, 100));  // above on its first sample
}

// A GPU pod running with less /dev/shm than the webhook would give it is found; once patched it
// is not; a CPU pod never is.
TEST_CASE("FindUnpatched finds the GPU pods shmguard would still size", "[shm_watch]") {
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a","uid":"u",
    "annotations":{"shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"160Mi"}},
    "spec":{"containers":[{"name":"t","resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})");
  auto found = FindUnpatched(pod, Policy{});
  REQUIRE(found);
  CHECK(found->required_bytes == 14078LL << 20);
  CHECK(found->current == "64Mi (container default)");
  CHECK_FALSE(found->policy_made);
  // Patched as the webhook patches it: nothing left.
  Evaluation ev = Evaluate(pod, Policy{});
  CHECK_FALSE(FindUnpatched(pod.patch(ev.patch.ToJson()), Policy{}));
  // Sized by an admission policy below the webhook's plan: found, and said to be policy-made.
  json policy_made = pod;
  policy_made["metadata"]["annotations"]["shmguard.io/plan"] = R"({"policyMode":true,"required":"1Gi"})";
  policy_made["spec"]["volumes"] = json::parse(R"([{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}])");
  policy_made["spec"]["containers"][0]["volumeMounts"] = json::parse(R"([{"name":"dshm","mountPath":"/dev/shm"}])");
  auto policy = FindUnpatched(policy_made, Policy{});
  REQUIRE(policy);
  CHECK(policy->policy_made);
  // Sized by the webhook (its plan, without policyMode), even below the formula, as a learned
  // size may be: its plan stands.
  json webhook_made = policy_made;
  webhook_made["metadata"]["annotations"]["shmguard.io/plan"] = R"({"learned":true,"required":"1Gi"})";
  CHECK_FALSE(FindUnpatched(webhook_made, Policy{}));
  // A CPU pod without annotations: never.
  CHECK_FALSE(FindUnpatched(json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},
    "spec":{"containers":[{"name":"c"}]}})"),
                            Policy{}));
}

}  // namespace
}  // namespace shmguard
