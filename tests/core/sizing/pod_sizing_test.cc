// SizePod: which pods are sized and how (a plan, an estimate, nothing), a profile raising the
// size, the memory limit, the size a patch gives and the plan annotation that records it.
#include "core/sizing/pod_sizing.h"

#include <catch2/catch.hpp>

#include "core/patch/plan_annotation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kMiB = 1 << 20, kGiB = 1ll << 30;

// The only pod template of `yaml` read and sized under the built-in policy (or `policy`).
struct Sized {
  json object;
  Workload w;
  PodReading r;
  PodSizing z;
  Sized(const std::string& yaml, const ObservedShm* observed = nullptr, Policy policy = Policy(),
        NamespaceRule rule = NamespaceRule())
      : object(test::Yaml(yaml)), w(test::OnlyTemplate(object)), policy_(std::move(policy)), rule_(std::move(rule)) {
    ctx_.observed = observed;
    r = ReadPod(w.templates[0], policy_);
    z = SizePod({w.templates[0], w, rule_, policy_, ctx_}, r);
  }

 private:
  Policy policy_;
  NamespaceRule rule_;
  PodContext ctx_;
};

std::string Pod(const std::string& annotations, const std::string& limits, const std::string& extra = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: " + annotations +
         "}\nspec:\n  containers: [{name: t, resources: {limits: " + limits + "}" + extra + "}]\n";
}

const char* kSizing = R"({shmguard.io/num-workers: "4", shmguard.io/batch-bytes: "16Mi"})";
const char* kFourGpus = "{nvidia.com/gpu: 4, memory: 64Gi}";

TEST_CASE("SizePod sizes a pod from its DataLoader annotations, or estimates a GPU pod, or neither", "[pod_sizing]") {
  struct Case {
    const char* name;
    std::string yaml;
    SizingKind kind;
  };
  const Case cases[] = {
      {"DataLoader annotations", Pod(kSizing, kFourGpus), SizingKind::kPlan},
      {"a GPU pod without them", Pod("{}", kFourGpus), SizingKind::kEstimate},
      {"no GPUs", Pod("{}", "{memory: 1Gi}"), SizingKind::kNone},
      {"opted out", Pod(R"({shmguard.io/mode: skip, shmguard.io/num-workers: "4"})", kFourGpus), SizingKind::kNone},
      {"a malformed annotation", Pod(R"({shmguard.io/num-workers: 4})", kFourGpus), SizingKind::kNone},
      {"a malformed GPU count", Pod("{}", "{nvidia.com/gpu: four}"), SizingKind::kNone},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Sized s(c.yaml);
    CHECK(s.z.kind == c.kind);
    CHECK_FALSE(s.z.error);
  }
  NamespaceRule strict;
  strict.require_annotations = true;
  CHECK(Sized(Pod("{}", kFourGpus), nullptr, Policy(), strict).z.kind == SizingKind::kNone);
  Policy leave;
  leave.unannotated.mode = UnannotatedMode::kLeave;
  CHECK(Sized(Pod("{}", kFourGpus), nullptr, leave).z.kind == SizingKind::kNone);
}

TEST_CASE("SizePod's plan: its size, the shm-plan finding, the memory limit and the annotation", "[pod_sizing]") {
  Sized s(Pod(kSizing, kFourGpus));
  REQUIRE(s.z.kind == SizingKind::kPlan);
  CHECK(s.z.required_bytes == s.z.plan.required_bytes);
  CHECK(s.z.target_bytes == s.z.required_bytes);
  REQUIRE(s.z.plan_finding);
  CHECK(s.z.plan_finding->check == Check::kShmPlan);
  CHECK(s.z.plan_finding->pointer == "/metadata/annotations/shmguard.io~1num-workers");
  CHECK_FALSE(s.z.learned);
  CHECK_FALSE(s.z.limit.denial);
  const json plan = json::parse(PlanAnnotation(s.z.note));
  CHECK(plan["workers"] == 4);
  CHECK(plan["batchBytes"] == "16Mi");
  CHECK(plan["procs"] == 4);
  CHECK(plan.dump() == PlanAnnotation(s.z.note));  // compact, keys sorted

  Sized tight(Pod(kSizing, "{nvidia.com/gpu: 4, memory: 1Gi}"));
  REQUIRE(tight.z.limit.denial);
  CHECK(tight.z.limit.denial->check == Check::kShmOverMemoryLimit);
}

TEST_CASE("SizePod raises the size to what the workload was seen to use, never lowers it", "[pod_sizing]") {
  ObservedShm big{"default", "Pod/p", 3 * kGiB, 4 * kGiB, 2, "2026-11-25T10:00:00Z", "p"};
  Sized raised(Pod(kSizing, kFourGpus), &big);
  REQUIRE(raised.z.learned);
  CHECK(raised.z.required_bytes > raised.z.plan.required_bytes);
  CHECK(raised.z.required_bytes == raised.z.learned->Number("required_bytes"));
  CHECK(json::parse(PlanAnnotation(raised.z.note))["observed"]["peak"] == "3Gi");

  ObservedShm small{"default", "Pod/p", 1 * kMiB, 4 * kGiB, 2, "2026-11-25T10:00:00Z", "p"};
  Sized kept(Pod(kSizing, kFourGpus), &small);
  REQUIRE(kept.z.learned);
  CHECK(kept.z.required_bytes == kept.z.plan.required_bytes);  // the formula wins
}

TEST_CASE("SizePod's estimate: the floor, what a patch gives, and the floor's numbers", "[pod_sizing]") {
  struct Case {
    const char* name;
    std::string yaml;
    bool own_is_enough;
    int64_t target;
  };
  const std::string own =
      ", volumeMounts: [{name: s, mountPath: /dev/shm}]}]\n  volumes: [{name: s, emptyDir: {medium: Memory, "
      "sizeLimit: ";
  const Case cases[] = {
      {"nothing at /dev/shm: the estimate, a quarter of the limit", Pod("{}", kFourGpus), false, 16 * kGiB},
      {"its own emptyDir below the floor: raised to the floor only",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: t, resources: {limits: " +
           std::string(kFourGpus) + "}" + own + "64Mi}}]\n",
       false, kGiB},
      {"its own emptyDir above the floor: enough",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: t, resources: {limits: " +
           std::string(kFourGpus) + "}" + own + "2Gi}}]\n",
       true, 2 * kGiB},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Sized s(c.yaml);
    REQUIRE(s.z.kind == SizingKind::kEstimate);
    REQUIRE(s.z.estimate);
    CHECK(s.z.required_bytes == kGiB);  // the floor: the policy's minimum
    CHECK(s.z.own_is_enough == c.own_is_enough);
    CHECK(s.z.target_bytes == c.target);
    CHECK(s.z.floor_numbers.front() == std::pair<std::string_view, int64_t>{"floor_bytes", kGiB});
    CHECK(json::parse(PlanAnnotation(s.z.note))["floor"] == "1Gi");
  }
}

}  // namespace
}  // namespace shmguard
