// WorkloadCandidates, ShmProfile objects, the index of them and the learned size.
#include "core/plan/shm_profile.h"

#include <catch2/catch.hpp>
#include <limits>
#include <nlohmann/json.hpp>

namespace shmguard {
namespace {

using nlohmann::json;
using Keys = std::vector<std::string>;

TEST_CASE("WorkloadCandidates keys a pod by its profile, else its top owner, else itself", "[shm_profile]") {
  struct Case {
    const char* name;
    const char* object;
    Keys keys;
  };
  const Case cases[] = {
      {"the profile annotation wins",
       R"({"kind":"Pod","metadata":{"name":"p","annotations":{"shmguard.io/profile":"llm-ft"},
          "ownerReferences":[{"kind":"Job","name":"j","controller":true}]}})",
       {"profile/llm-ft"}},
      {"a Job's pod",
       R"({"kind":"Pod","metadata":{"name":"j-abcde","ownerReferences":[{"kind":"Job","name":"j","controller":true}]}})",
       {"Job/j"}},
      {"a CronJob's Job: the name and the scheduled minute",
       R"({"kind":"Pod","metadata":{"name":"x","ownerReferences":[{"kind":"Job","name":"nightly-29400360","controller":true}]}})",
       {"CronJob/nightly", "Job/nightly-29400360"}},
      {"seven digits are not a scheduled minute",
       R"({"kind":"Pod","metadata":{"name":"x","ownerReferences":[{"kind":"Job","name":"run-1234567","controller":true}]}})",
       {"Job/run-1234567"}},
      {"a JobSet's Job",
       R"({"kind":"Pod","metadata":{"name":"x","labels":{"jobset.sigs.k8s.io/jobset-name":"llm"},
          "ownerReferences":[{"kind":"Job","name":"llm-workers-0","controller":true}]}})",
       {"JobSet/llm", "Job/llm-workers-0"}},
      {"a Deployment's ReplicaSet",
       R"({"kind":"Pod","metadata":{"name":"serve-7d9f-x","labels":{"pod-template-hash":"7d9f"},
          "ownerReferences":[{"kind":"ReplicaSet","name":"serve-7d9f","controller":true}]}})",
       {"Deployment/serve", "ReplicaSet/serve-7d9f"}},
      {"a LeaderWorkerSet's StatefulSet: one per group, the set named by its label",
       R"({"kind":"Pod","metadata":{"name":"vllm-1-2","labels":{"leaderworkerset.sigs.k8s.io/name":"vllm"},
          "ownerReferences":[{"kind":"StatefulSet","name":"vllm-1","controller":true}]}})",
       {"LeaderWorkerSet/vllm", "StatefulSet/vllm-1"}},
      {"a StatefulSet of its own",
       R"({"kind":"Pod","metadata":{"name":"db-0","ownerReferences":[{"kind":"StatefulSet","name":"db","controller":true}]}})",
       {"StatefulSet/db"}},
      {"a ReplicaSet of its own",
       R"({"kind":"Pod","metadata":{"name":"rs-x","ownerReferences":[{"kind":"ReplicaSet","name":"rs","controller":true}]}})",
       {"ReplicaSet/rs"}},
      {"only the controller counts",
       R"({"kind":"Pod","metadata":{"name":"w-0","ownerReferences":[{"kind":"Node","name":"n"},
          {"kind":"PyTorchJob","name":"w","controller":true}]}})",
       {"PyTorchJob/w"}},
      {"a bare pod", R"({"kind":"Pod","metadata":{"name":"alone"}})", {"Pod/alone"}},
      {"a manifest is its own workload", R"({"kind":"CronJob","metadata":{"name":"nightly"}})", {"CronJob/nightly"}},
      {"a manifest's profile",
       R"({"kind":"Job","metadata":{"name":"j","annotations":{"shmguard.io/profile":"x"}}})",
       {"profile/x"}},
      {"no name", R"({"kind":"Job","metadata":{}})", {}},
      {"a list's pod has no kind",
       R"({"metadata":{"name":"x","ownerReferences":[{"kind":"Job","name":"j","controller":true}]}})",
       {"Job/j"}},
      {"owners of the wrong type",
       R"({"kind":"Pod","metadata":{"name":"p","ownerReferences":{"kind":"Job"}}})",
       {"Pod/p"}},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      json object = json::parse(c.object);
      CHECK(WorkloadCandidates(object) == c.keys);
    }
  }
}

TEST_CASE("ProfileName is the kind in lower case and the name", "[shm_profile]") {
  CHECK(ProfileName("CronJob/nightly") == "cronjob.nightly");
  CHECK(ProfileName("profile/llm-ft") == "profile.llm-ft");
  CHECK(ProfileName(std::string("Job/") + std::string(300, 'a')).size() == 253);
}

TEST_CASE("A ShmProfile written is read back the same", "[shm_profile]") {
  ObservedShm o{"team-a", "CronJob/nightly", 300 << 20, 1 << 30, 3, "2026-11-25T10:00:00Z", "nightly-29400360-x"};
  json written = json::parse(ShmProfileJson(o, "42"));
  CHECK(written["metadata"]["name"] == "cronjob.nightly");
  CHECK(written["metadata"]["resourceVersion"] == "42");
  auto back = ReadShmProfile(written);
  REQUIRE(back);
  CHECK(back->namespace_name == "team-a");
  CHECK(back->workload == "CronJob/nightly");
  CHECK(back->peak_bytes == 300 << 20);
  CHECK(back->size_bytes == 1 << 30);
  CHECK(back->runs == 3);
  CHECK(back->last_observed == "2026-11-25T10:00:00Z");
  CHECK(back->last_pod == "nightly-29400360-x");
  CHECK_FALSE(json::parse(ShmProfileJson(o)).at("metadata").contains("resourceVersion"));
}

TEST_CASE("A malformed ShmProfile is an error naming the field", "[shm_profile]") {
  struct Case {
    const char* object;
    const char* where;
  };
  const Case cases[] = {
      {R"({"kind":"Pod"})", "/kind"},
      {R"({"kind":"ShmProfile","spec":{}})", "/spec/workload"},
      {R"({"kind":"ShmProfile","spec":{"workload":"nokind"}})", "/spec/workload"},
      {R"({"kind":"ShmProfile","spec":{"workload":"Job/j"},"status":{"peakBytes":"1Gi"}})", "/status/peakBytes"},
      {R"({"kind":"ShmProfile","spec":{"workload":"Job/j"},"status":{"runs":-1}})", "/status/runs"},
      // Past any node's memory: 2^63 - 1, which × 1.5 used to print as -4Ei.
      {R"({"kind":"ShmProfile","spec":{"workload":"Job/j"},"status":{"peakBytes":9223372036854775807}})",
       "/status/peakBytes"},
      {R"({"kind":"ShmProfile","spec":{"workload":"Job/j"},"status":{"sizeBytes":1125899906842625}})",
       "/status/sizeBytes"},
      {R"({"kind":"ShmProfile","spec":{"workload":"Job/j"},"status":{"lastPod":3}})", "/status/lastPod"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.object);
    json object = json::parse(c.object);
    auto r = ReadShmProfile(object);
    REQUIRE_FALSE(r);
    CHECK(r.error().where.pointer == c.where);
  }
}

TEST_CASE("ObservationIndex finds the first candidate with a profile in the namespace", "[shm_profile]") {
  ObservationIndex index;
  index.Put({"team-a", "CronJob/nightly", 100, 0, 1, "", ""});
  index.Put({"team-a", "Job/nightly-29400360", 50, 0, 1, "", ""});
  index.Put({"team-b", "Job/other", 7, 0, 1, "", ""});
  REQUIRE(index.Find("team-a", {"CronJob/nightly", "Job/nightly-29400360"}));
  CHECK(index.Find("team-a", {"CronJob/nightly", "Job/nightly-29400360"})->peak_bytes == 100);
  CHECK(index.Find("team-a", {"CronJob/x", "Job/nightly-29400360"})->peak_bytes == 50);
  CHECK(index.Find("team-b", {"CronJob/nightly"}) == nullptr);  // namespaces do not share
  index.Put({"team-a", "CronJob/nightly", 200, 0, 2, "", ""});  // replaced, not added
  CHECK(index.size() == 3);
  CHECK(index.Find("team-a", {"CronJob/nightly"})->peak_bytes == 200);
  index.Erase("team-a", "CronJob/nightly");
  CHECK(index.Find("team-a", {"CronJob/nightly"}) == nullptr);
}

TEST_CASE("LearnedBytes is the peak times the margin, rounded up to a MiB", "[shm_profile]") {
  constexpr int64_t kMi = 1 << 20;
  CHECK(LearnedBytes(0, 1'250'000) == 0);
  CHECK(LearnedBytes(100 * kMi, 1'250'000) == 125 * kMi);
  CHECK(LearnedBytes(100 * kMi + 1, 1'000'000) == 101 * kMi);
  CHECK(LearnedBytes(109 * kMi, 1'500'000) == 164 * kMi);                // 163.5 MiB, rounded up
  CHECK(LearnedBytes(int64_t{1} << 50, 2'000'000) == int64_t{1} << 51);  // no overflow
  // Past int64 (a peak ReadShmProfile refuses, a margin the policy refuses): the largest whole
  // MiB, never a wrapped number — 2^62 × 10 once wrapped to a positive 1Mi.
  const int64_t ceiling = std::numeric_limits<int64_t>::max() / kMi * kMi;
  CHECK(LearnedBytes(std::numeric_limits<int64_t>::max(), 1'500'000) == ceiling);
  CHECK(LearnedBytes(int64_t{1} << 62, 10'000'000) == ceiling);
  CHECK(LearnedBytes(kMi, 0) == 0);
}

TEST_CASE("ProfileExpired reads the agent's times", "[shm_profile]") {
  ObservedShm o;
  o.last_observed = "2026-11-01T00:00:00Z";
  const int64_t now = *ParseRfc3339Utc("2026-11-27T00:00:00Z");
  CHECK_FALSE(ProfileExpired(o, now, 30));
  CHECK(ProfileExpired(o, now, 25));
  o.last_observed = "yesterday";
  CHECK(ProfileExpired(o, now, 30));  // no time to keep it by
}

}  // namespace
}  // namespace shmguard
