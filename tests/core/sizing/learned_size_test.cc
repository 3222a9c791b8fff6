// Evaluate with ShmProfiles (EvaluateOptions::observations): a workload's next pods get
// max(the formula's size, observed peak × margin), say so, and meet the same memory rules.
#include <catch2/catch.hpp>

#include "core/values/quantity.h"
#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
constexpr int64_t kMi = 1 << 20, kGi = 1 << 30;

// A pod of Job `job` (or CronJob `job`'s, when `job` ends in a scheduled minute) with one GPU.
json JobPod(const std::string& job, const std::string& annotations, const std::string& memory = "8Gi") {
  return test::Yaml("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + job + "-x\n  annotations: " + annotations +
                    "\n  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: " + job +
                    ", controller: true}]\nspec:\n  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, "
                    "memory: " +
                    memory + "}}}]\n");
}

ObservationIndex Profiles(std::vector<ObservedShm> list) {
  ObservationIndex index;
  for (auto& o : list) index.Put(std::move(o));
  return index;
}

int64_t PatchedSize(const json& object, const Evaluation& ev) {
  json out = object.patch(ev.patch.ToJson());
  for (const auto& v : out["spec"]["volumes"]) {
    if (v["name"] == "dshm") return *ParseBytes(v["emptyDir"]["sizeLimit"].get<std::string>(), "sizeLimit");
  }
  return 0;
}

json PlanOf(const json& object, const Evaluation& ev) {
  json out = object.patch(ev.patch.ToJson());
  return json::parse(out["metadata"]["annotations"]["shmguard.io/plan"].get<std::string>());
}

const char* kSized = "{shmguard.io/num-workers: \"2\", shmguard.io/batch-bytes: 16Mi}";

TEST_CASE("An observed peak above the plan sizes the next pods", "[learned_size]") {
  json pod = JobPod("train", kSized);
  Evaluation plain = Evaluate(pod, Policy{}, {.namespace_name = "team-a"});
  const int64_t planned = plain.RequiredBytes();
  REQUIRE(planned > 0);
  ObservationIndex index =
      Profiles({{"team-a", "Job/train", planned, 2 * planned, 3, "2026-11-25T10:00:00Z", "train-y"}});
  Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a", .observations = &index});
  const int64_t learned = LearnedBytes(planned, 1'500'000);
  CHECK(ev.RequiredBytes() == learned);
  CHECK(PatchedSize(pod, ev) == learned);
  const auto ev_findings = ev.AllFindings();
  const Finding* f = test::FindingOf(ev_findings, Check::kSizedFromObservation);
  REQUIRE(f);
  CHECK(f->Number("peak_bytes") == planned);
  CHECK(f->Number("formula_bytes") == planned);
  CHECK(f->Number("learned_bytes") == learned);
  CHECK(f->Number("runs") == 3);
  CHECK(f->Value("workload") == "Job/train");
  CHECK(f->pointer == "/metadata/annotations");
  json plan = PlanOf(pod, ev);
  CHECK(plan["required"] == FormatBytes(learned));
  CHECK(plan["observed"] == json::parse(R"({"last":"2026-11-25T10:00:00Z","peak":")" + FormatBytes(planned) +
                                        R"(","runs":3,"workload":"Job/train"})"));
  CHECK(plan["workers"] == 2);  // the formula's inputs stay
}

TEST_CASE("A plan above the observed peak stays", "[learned_size]") {
  json pod = JobPod("train", kSized);
  ObservationIndex index = Profiles({{"team-a", "Job/train", 10 * kMi, 0, 1, "t", "p"}});
  Evaluation plain = Evaluate(pod, Policy{}, {.namespace_name = "team-a"});
  Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a", .observations = &index});
  CHECK(ev.RequiredBytes() == plain.RequiredBytes());
  const auto ev_findings = ev.AllFindings();
  const Finding* f = test::FindingOf(ev_findings, Check::kSizedFromObservation);
  REQUIRE(f);
  CHECK(f->Number("learned_bytes") == 15 * kMi);
  CHECK(f->Number("formula_bytes") == plain.RequiredBytes());
}

TEST_CASE("An unannotated pod's estimate gives way to its observed peak", "[learned_size]") {
  json pod = JobPod("train", "{}", "8Gi");
  Evaluation plain = Evaluate(pod, Policy{}, {.namespace_name = "team-a"});
  CHECK(PatchedSize(pod, plain) == 2 * kGi);  // 25 % of 8Gi
  CHECK(test::FindingOf(plain.AllFindings(), Check::kSizedWithoutAnnotations));

  struct Case {
    const char* name;
    int64_t peak, size;
  };
  const Case cases[] = {
      {"below the floor: the floor", 100 * kMi, kGi},  // 150Mi < the 1Gi minimum
      {"above the floor: the peak × 1.5", 1200 * kMi, 1800 * kMi},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      ObservationIndex index = Profiles({{"team-a", "Job/train", c.peak, 0, 1, "t", "p"}});
      Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a", .observations = &index});
      CHECK(PatchedSize(pod, ev) == c.size);
      CHECK(test::FindingOf(ev.AllFindings(), Check::kSizedFromObservation));
      CHECK_FALSE(test::FindingOf(ev.AllFindings(), Check::kSizedWithoutAnnotations));
      CHECK(PlanOf(pod, ev)["observed"]["peak"] == FormatBytes(c.peak));
    }
  }
}

TEST_CASE("An unannotated pod whose own /dev/shm covers its learned size keeps it, and says so", "[learned_size]") {
  json pod = test::Yaml(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-x\n  ownerReferences: [{apiVersion: batch/v1, kind: Job, "
      "name: train, controller: true}]\nspec:\n  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 4Gi}}]\n"
      "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 16Gi}}, volumeMounts: [{name: dshm, "
      "mountPath: /dev/shm}]}]\n");
  ObservationIndex index = Profiles({{"team-a", "Job/train", 2 * kGi, 2 * kGi, 1, "2026-11-25T10:00:00Z", "train-y"}});
  Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a", .observations = &index});
  CHECK(ev.verdict == Verdict::kOk);
  CHECK(ev.patch.empty());
  const auto findings = ev.AllFindings();
  const Finding* sufficient = test::FindingOf(findings, Check::kShmSufficient);
  REQUIRE(sufficient);
  CHECK(sufficient->Number("learned_bytes") == 3 * kGi);  // the peak × 1.5
  CHECK(sufficient->Value("current") == "emptyDir Memory 4Gi");
  CHECK(test::FindingOf(findings, Check::kSizedFromObservation));
}

TEST_CASE("A learned size over the memory limit is denied like any other", "[learned_size]") {
  json pod = JobPod("train", "{}", "2Gi");
  ObservationIndex index = Profiles({{"team-a", "Job/train", 1800 * kMi, 0, 1, "t", "p"}});
  Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a", .observations = &index});
  CHECK(ev.verdict == Verdict::kDeny);
  const auto ev_findings = ev.AllFindings();
  const Finding* over = test::FindingOf(ev_findings, Check::kShmOverMemoryLimit);
  REQUIRE(over);
  CHECK(over->Number("required_bytes") == 2700 * kMi);
}

TEST_CASE("Profiles apply to their own workload and namespace only", "[learned_size]") {
  ObservationIndex index = Profiles({
      {"team-a", "CronJob/nightly", 1200 * kMi, 0, 4, "t", "p"},
      {"team-a", "profile/shared", 1400 * kMi, 0, 2, "t", "p"},
  });
  struct Case {
    const char* name;
    json pod;
    const char* ns;
    int64_t size;  // 0: not learned
  };
  const Case cases[] = {
      {"a run of the CronJob", JobPod("nightly-29400360", "{}"), "team-a", 1800 * kMi},
      {"the same CronJob's name in another namespace", JobPod("nightly-29400360", "{}"), "team-b", 0},
      {"another Job", JobPod("other", "{}"), "team-a", 0},
      {"a profile shared by name", JobPod("run-7", "{shmguard.io/profile: shared}"), "team-a", 2100 * kMi},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      Evaluation ev = Evaluate(c.pod, Policy{}, {.namespace_name = c.ns, .observations = &index});
      const auto ev_findings = ev.AllFindings();
      const Finding* f = test::FindingOf(ev_findings, Check::kSizedFromObservation);
      CHECK((f != nullptr) == (c.size != 0));
      if (c.size) CHECK(PatchedSize(c.pod, ev) == c.size);
    }
  }
}

TEST_CASE("A manifest is looked up under its own kind and name", "[learned_size]") {
  json cron = test::Yaml(R"(apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: team-a}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}}]
)");
  ObservationIndex index = Profiles({{"team-a", "CronJob/nightly", 1200 * kMi, 0, 4, "t", "p"}});
  Evaluation ev = Evaluate(cron, Policy{}, {.observations = &index});
  CHECK(ev.RequiredBytes() == 1800 * kMi);
  CHECK(test::FindingOf(ev.AllFindings(), Check::kSizedFromObservation));
}

}  // namespace
}  // namespace shmguard
