// EstimateShm and the unannotated rule through Evaluate: GPU pods without DataLoader
// annotations get the floor or a share of the memory limit; what they have wins over a guess.
#include "core/plan/shm_estimate.h"

#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/verdict/admission.h"
#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
constexpr int64_t kMiB = 1 << 20, kGiB = 1ll << 30;

PodFacts Facts(int64_t procs, std::optional<int64_t> memory, int64_t nodes = 1, bool shm_off = false) {
  PodFacts f;
  f.gpus = procs;
  f.requests_gpus = true;
  f.procs = procs;
  f.nodes = nodes;
  f.memory_limit_bytes = memory;
  f.nccl_shm_disabled = shm_off;
  return f;
}

TEST_CASE("EstimateShm: floor, share of the memory limit, and the caps", "[shm_estimate]") {
  struct Case {
    const char* name;
    PodFacts facts;
    UnannotatedMode mode;
    int64_t fraction_ppm;
    int64_t floor, estimate;
    const char* basis;
  } cases[] = {
      {"limit known: a quarter", Facts(4, 64 * kGiB), UnannotatedMode::kEstimate, 250'000, kGiB, 16 * kGiB,
       "25% of the 64Gi memory limit"},
      {"limit unknown: the floor", Facts(4, std::nullopt), UnannotatedMode::kEstimate, 250'000, kGiB, kGiB,
       "no memory limit"},
      {"share below the floor", Facts(1, 2 * kGiB), UnannotatedMode::kEstimate, 250'000, kGiB, kGiB,
       "25% of the 2Gi memory limit is less"},
      {"share clamped by maxFractionOfMemoryLimit", Facts(1, 64 * kGiB), UnannotatedMode::kEstimate, 900'000, kGiB,
       32 * kGiB, "50% of the 64Gi memory limit (maxFractionOfMemoryLimit)"},
      {"share rounded down to a MiB", Facts(1, 20'000'000'000), UnannotatedMode::kEstimate, 250'000, kGiB, 4768 * kMiB,
       "25% of the"},
      {"mode floor ignores the limit", Facts(4, 64 * kGiB), UnannotatedMode::kFloor, 250'000, kGiB, kGiB,
       "unannotated.mode: floor"},
      // 8 procs, 2 nodes: (8 × 4 × 9637892 + 8 × 34210180 + 64Mi) × 1.2 = 760.6Mi -> 761Mi < 1Gi.
      {"multi-node 8 procs", Facts(8, std::nullopt, 2), UnannotatedMode::kEstimate, 250'000, kGiB, kGiB, "floor"},
      // 64 procs: the NCCL shm term alone is 64 × 4 × 9637892 B = 2353Mi.
      {"many procs lift the floor", Facts(64, 64 * kGiB), UnannotatedMode::kEstimate, 250'000, 2901 * kMiB, 16 * kGiB,
       "25%"},
      {"NCCL_SHM_DISABLE drops that term", Facts(64, 64 * kGiB, 1, true), UnannotatedMode::kEstimate, 250'000, kGiB,
       16 * kGiB, "25%"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Policy policy;
    policy.unannotated.mode = c.mode;
    policy.unannotated.fraction_ppm = c.fraction_ppm;
    auto e = EstimateShm(PodShmInputs(c.facts), c.facts.memory_limit_bytes, policy);
    REQUIRE(e.has_value());
    CHECK(e->floor_bytes == c.floor);
    CHECK(e->estimate_bytes == c.estimate);
    CHECK_THAT(e->basis, Catch::Contains(c.basis));
    CHECK(e->floor_plan.dataloader_bytes == 0);
    CHECK(e->floor_plan.nccl_shm_bytes == (c.facts.nccl_shm_disabled ? 0 : e->floor_plan.nccl_shm_bytes));
  }
}

json PodWith(const std::string& spec, const std::string& annotations = "{}") {
  return test::Yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: " + annotations + "}\nspec:\n" + spec);
}

const char* kFourGpus = "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]\n";

struct EvalCase {
  const char* name;
  std::string spec;
  std::string annotations;
  const char* ns;
  Verdict verdict;
  int64_t required;     // PodEvaluation::required_bytes
  const char* check;    // the ID of the finding that says why
  const char* current;  // current_shm
};

TEST_CASE("Evaluate sizes GPU pods without annotations by the unannotated rule", "[shm_estimate]") {
  const std::string mem_dshm = "  volumes: [{name: dshm, emptyDir: {medium: Memory";
  const std::string mounted =
      "  containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm}], "
      "resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]\n";
  const EvalCase cases[] = {
      {"limit known", kFourGpus, "{}", "team-a", Verdict::kPatch, 16 * kGiB, "sized-without-annotations",
       "64Mi (container default)"},
      {"limit unknown", "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 4}}}]\n", "{}", "team-a",
       Verdict::kPatch, kGiB, "sized-without-annotations", "64Mi (container default)"},
      {"floor above the limit", "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 512Mi}}}]\n",
       "{}", "team-a", Verdict::kDeny, kGiB, "shm-over-memory-limit", "64Mi (container default)"},
      {"floor above the max fraction",
       "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 1536Mi}}}]\n", "{}", "team-a",
       Verdict::kDeny, kGiB, "shm-over-memory-limit", "64Mi (container default)"},
      {"hostIPC without a mount", std::string("  hostIPC: true\n") + kFourGpus, "{}", "team-a", Verdict::kOk, kGiB,
       "shm-sufficient", "the node's /dev/shm (hostIPC: true)"},
      {"hostIPC with a small mount", "  hostIPC: true\n" + mem_dshm + ", sizeLimit: 256Mi}}]\n" + mounted, "{}",
       "team-a", Verdict::kPatch, kGiB, "sized-without-annotations", "emptyDir Memory 256Mi"},
      {"own emptyDir larger than the floor", mem_dshm + ", sizeLimit: 2Gi}}]\n" + mounted, "{}", "team-a", Verdict::kOk,
       kGiB, "shm-sufficient", "emptyDir Memory 2Gi"},
      {"own emptyDir without sizeLimit", mem_dshm + "}}]\n" + mounted, "{}", "team-a", Verdict::kOk, kGiB,
       "shm-sufficient", "emptyDir Memory without sizeLimit"},
      {"own emptyDir smaller: raised to the floor only", mem_dshm + ", sizeLimit: 512Mi}}]\n" + mounted, "{}", "team-a",
       Verdict::kPatch, kGiB, "sized-without-annotations", "emptyDir Memory 512Mi"},
      {"hostPath /dev/shm is left as it is",
       "  volumes: [{name: shm, hostPath: {path: /dev/shm}}]\n"
       "  containers: [{name: t, volumeMounts: [{name: shm, mountPath: /dev/shm}], resources: {limits: "
       "{nvidia.com/gpu: 1}}}]\n",
       "{}", "team-a", Verdict::kOk, kGiB, "shm-not-memory-backed",
       "hostPath /dev/shm (the node's shared memory, not bounded by the pod)"},
      {"NCCL_SHM_DISABLE",
       "  containers: [{name: t, env: [{name: NCCL_SHM_DISABLE, value: \"1\"}], "
       "resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]\n",
       "{}", "team-a", Verdict::kPatch, 16 * kGiB, "nccl-shm-disabled", "64Mi (container default)"},
      {"NCCL_P2P_DISABLE",
       "  containers: [{name: t, env: [{name: NCCL_P2P_DISABLE, value: \"1\"}], "
       "resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]\n",
       "{}", "team-a", Verdict::kPatch, 16 * kGiB, "nccl-p2p-disabled", "64Mi (container default)"},
      {"CPU-only", "  containers: [{name: t, resources: {limits: {memory: 64Gi}}}]\n", "{}", "team-a", Verdict::kOk, 0,
       "no-gpus", "64Mi (container default)"},
      {"init container GPU makes a GPU pod",
       "  initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 1}}}]\n  containers: [{name: t}]\n", "{}",
       "team-a", Verdict::kPatch, kGiB, "sized-without-annotations", "64Mi (container default)"},
      {"skip", kFourGpus, "{shmguard.io/mode: skip}", "team-a", Verdict::kSkip, 0, "opted-out",
       "64Mi (container default)"},
      {"requireAnnotations", kFourGpus, "{}", "ml-a", Verdict::kDeny, 0, "annotations-required",
       "64Mi (container default)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Evaluation ev = Evaluate(PodWith(c.spec, c.annotations), Policy{}, {.namespace_name = c.ns});
    CHECK(ev.verdict == c.verdict);
    CAPTURE(test::Ids(ev.AllFindings()));
    const std::vector<Finding> all = ev.AllFindings();
    CHECK(test::FindingOf(all, *FindCheck(c.check)) != nullptr);
    REQUIRE(ev.pods.size() == 1);
    CHECK(ev.pods[0].required_bytes == c.required);
    CHECK(ev.pods[0].current_shm == c.current);
    CHECK(ev.patch.empty() == (c.verdict != Verdict::kPatch));
  }
}

TEST_CASE("Evaluate: an estimated patch holds the usual operations and is idempotent", "[shm_estimate]") {
  json pod = PodWith(kFourGpus);
  Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a"});
  REQUIRE(ev.verdict == Verdict::kPatch);
  json out = pod.patch(ev.patch.ToJson());
  CHECK(out["spec"]["volumes"][0] ==
        json::parse(R"({"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"16Gi"}})"));
  CHECK(out["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/dev/shm");
  CHECK_FALSE(out["spec"]["containers"][0].contains("securityContext"));  // no RDMA
  CHECK_FALSE(out["spec"].contains("hostIPC"));                           // hostIPC auto
  json plan = json::parse(out["metadata"]["annotations"]["shmguard.io/plan"].get<std::string>());
  CHECK(plan == json::parse(R"({"estimated":"25% of the 64Gi memory limit","floor":"1Gi","gpus":4,"nodes":1,
                               "procs":4,"required":"16Gi"})"));
  Evaluation again = Evaluate(out, Policy{}, {.namespace_name = "team-a"});
  CHECK(again.verdict == Verdict::kOk);
  CHECK(again.patch.empty());

  Policy leave;
  leave.unannotated.mode = UnannotatedMode::kLeave;
  Evaluation left = Evaluate(pod, leave, {.namespace_name = "team-a"});
  CHECK(left.verdict == Verdict::kOk);
  CHECK(left.patch.empty());
  CHECK(test::Ids(left.AllFindings()) == std::vector<std::string>{"unannotated-left"});

  Policy restricted;
  restricted.namespaces = {{{"*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kBaseline}};
  restricted.host_ipc = HostIpcMode::kAlways;  // what baseline keeps out, it says
  Evaluation baseline = Evaluate(pod, restricted, {.namespace_name = "team-a"});
  json fixed = pod.patch(baseline.patch.ToJson());
  CHECK_FALSE(fixed["spec"].contains("hostIPC"));
  CHECK_FALSE(fixed["spec"]["containers"][0].contains("securityContext"));
  const std::vector<Finding> said = baseline.AllFindings();
  const Finding* kept_out = test::FindingOf(said, Check::kPodSecurityLimitsPatch);
  REQUIRE(kept_out != nullptr);
  CHECK(kept_out->Value("field") == "hostIPC");
  CHECK(kept_out->Value("level") == "baseline");
}

TEST_CASE("Decide gives the same answer for an unannotated GPU pod on each face", "[shm_estimate]") {
  // The audit's verdict is Evaluate's (tests/cli); here /mutate and /validate on the same pod.
  auto decide = [](const json& pod, const std::string& ns, Face face) {
    json review = {{"apiVersion", "admission.k8s.io/v1"},
                   {"kind", "AdmissionReview"},
                   {"request",
                    {{"uid", "u"},
                     {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                     {"namespace", ns},
                     {"operation", "CREATE"},
                     {"object", pod}}}};
    auto request = ParseReview(review);
    REQUIRE(request.has_value());
    return Decide(*request, {Policy{}, face});
  };
  Policy enforce_policy;
  json pod = PodWith(kFourGpus);
  Decision mutate = decide(pod, "team-a", Face::kMutate);
  CHECK(mutate.allowed);
  CHECK(mutate.verdict == Verdict::kPatch);
  CHECK(mutate.required_bytes == 16 * kGiB);
  const Finding* estimate = test::FindingOf(mutate.findings, Check::kSizedWithoutAnnotations);
  REQUIRE(estimate != nullptr);
  CHECK(estimate->Number("required_bytes") == 16 * kGiB);
  CHECK(estimate->Value("basis") == "25% of the 64Gi memory limit");

  Decision warn = decide(pod, "team-a", Face::kValidate);
  CHECK(warn.allowed);
  const Finding* below = test::FindingOf(warn.findings, Check::kShmBelowNeed);
  REQUIRE(below != nullptr);
  CHECK(below->Value("current") == "64Mi (container default)");
  CHECK(below->Number("floor_bytes") == kGiB);

  // An enforce namespace that does not require annotations: below the floor is a denial.
  Policy policy;
  policy.namespaces = {{{"gpu-*"}, NamespaceMode::kEnforce, false, PodSecurityLevel::kPrivileged}};
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request",
                  {{"uid", "u"},
                   {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                   {"namespace", "gpu-a"},
                   {"operation", "CREATE"},
                   {"object", pod}}}};
  auto request = ParseReview(review);
  REQUIRE(request.has_value());
  Decision denied = Decide(*request, {policy, Face::kValidate});
  CHECK_FALSE(denied.allowed);
  const Finding* denial = test::FindingOf(denied.findings, Check::kShmBelowNeed);
  REQUIRE(denial != nullptr);
  CHECK(denial->Number("floor_bytes") == kGiB);
  // After /mutate the pod passes.
  json patched = pod.patch(Decide(*request, {policy, Face::kMutate}).patch.ToJson());
  review["request"]["object"] = patched;
  auto again = ParseReview(review);
  REQUIRE(again.has_value());
  CHECK(Decide(*again, {policy, Face::kValidate}).allowed);
}

}  // namespace
}  // namespace shmguard
