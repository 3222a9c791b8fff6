// EvaluatePod: one pod template's verdict and the reason behind it, naming the field a user
// must change (docs/sources.md §1, §3, §5).
#include "core/pod_evaluation.h"

#include <catch2/catch.hpp>

#include "core/shm_remedy.h"
#include "io/finding_text.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
using test::Yaml;

json PodWith(const std::string& annotations, const std::string& spec) {
  return Yaml("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: " + annotations + "\nspec:\n" + spec);
}

// The verdict of the only pod template of `object` under the policy's rule for team-a.
PodEvaluation EvaluateOnlyPod(const json& object, const Policy& policy = Policy{}) {
  Workload w = test::OnlyTemplate(object);
  return EvaluatePod(w.templates[0], w, MatchNamespace(policy, "team-a"), policy, PodContext{});
}

std::string Reasons(const PodEvaluation& pe) {
  std::string all;
  for (const auto& r : test::Words(pe.findings)) all += r + "\n";
  return all;
}

// The ID of the first finding whose words contain `text`; "" when none does.
std::string CheckSaying(const PodEvaluation& pe, const std::string& text) {
  for (const auto& f : pe.findings) {
    if (io::FindingText(f).find(text) != std::string::npos) return std::string(f.id());
  }
  return "";
}

struct VerdictCase {
  const char* name;
  const char* annotations;
  const char* spec;
  Verdict verdict;
  const char* reason;  // a substring of the findings' words
  const char* check;   // the ID of the finding that says it
};

const char* kGpuSpec = "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}}]";

const VerdictCase kCases[] = {
    {"no annotations", "{}", kGpuSpec, Verdict::kPatch, "/dev/shm is 64Mi (container default), below the 1Gi floor",
     "shm-below-need"},
    {"opted out", "{shmguard.io/mode: skip, shmguard.io/num-workers: \"8\"}", kGpuSpec, Verdict::kSkip, "opted out",
     "opted-out"},
    {"unknown mode", "{shmguard.io/mode: always}", kGpuSpec, Verdict::kDeny, "only value is \"skip\"",
     "annotation-invalid"},
    {"needs patch", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kPatch,
     "dshm needs 1657Mi = (2 procs × (4 workers × 2 + 2) × 64Mi + 36.8Mi NCCL + 64Mi base) × 1.2", "shm-plan"},
    {"workers zero needs no batch bytes", "{shmguard.io/num-workers: \"0\"}", kGpuSpec, Verdict::kPatch,
     "dshm needs 1Gi = (36.8Mi NCCL + 64Mi base) × 1.2, raised to the 1Gi floor", "shm-plan"},
    {"batch bytes without workers", "{shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kDeny,
     "annotation shmguard.io/num-workers: is required", "annotation-invalid"},
    {"workers without batch bytes", "{shmguard.io/num-workers: \"4\"}", kGpuSpec, Verdict::kDeny,
     "annotation shmguard.io/batch-bytes: is required when num-workers > 0", "annotation-invalid"},
    {"unquoted number", "{shmguard.io/num-workers: 4, shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kDeny,
     "quote it (\"4\")", "annotation-invalid"},
    {"negative workers", "{shmguard.io/num-workers: \"-1\", shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kDeny,
     "must be a whole number from 0 to 4096", "annotation-invalid"},
    {"huge workers", "{shmguard.io/num-workers: \"99999999999999999999\", shmguard.io/batch-bytes: 1Mi}", kGpuSpec,
     Verdict::kDeny, "must be a whole number", "annotation-invalid"},
    {"bad quantity", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 64MB}", kGpuSpec, Verdict::kDeny,
     "annotation shmguard.io/batch-bytes: \"64MB\" is not a valid quantity", "annotation-invalid"},
    {"negative batch", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: \"-1Mi\"}", kGpuSpec, Verdict::kDeny,
     "must not be negative", "annotation-invalid"},
    {"overflow", "{shmguard.io/num-workers: \"4096\", shmguard.io/batch-bytes: 4Ei}", kGpuSpec, Verdict::kDeny,
     "exceeds 2^63-1 bytes", "object-invalid"},
    {"quantity beyond int64", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: \"1e19\"}", kGpuSpec,
     Verdict::kDeny, "larger than 2^63-1", "annotation-invalid"},
    {"unquoted float", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1e19}", kGpuSpec, Verdict::kDeny,
     "quote it (\"1e+19\")", "annotation-invalid"},
    {"prefetch zero",
     "{shmguard.io/num-workers: \"1\", shmguard.io/prefetch-factor: \"0\", shmguard.io/batch-bytes: 1Mi}", kGpuSpec,
     Verdict::kDeny, "shmguard.io/prefetch-factor", "annotation-invalid"},
    {"above memory limit", "{shmguard.io/num-workers: \"16\", shmguard.io/batch-bytes: 1Gi}", kGpuSpec, Verdict::kDeny,
     "memory limit 64Gi (sum of container limits) is below the", "shm-over-memory-limit"},
    {"above max fraction", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 2Gi}", kGpuSpec, Verdict::kDeny,
     "is more than 0.5 of the memory limit 64Gi", "shm-over-memory-limit"},
    {"hostPath /dev/shm", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: [{name: shm, hostPath: {path: /dev/shm}}]\n"
     "  containers: [{name: t, volumeMounts: [{name: shm, mountPath: /dev/shm}]}]",
     Verdict::kDeny, "/dev/shm is mounted from hostPath /dev/shm", "shm-not-memory-backed"},
    {"disk emptyDir at /dev/shm", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: [{name: dshm, emptyDir: {}}]\n"
     "  containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]",
     Verdict::kDeny, "on the node's disk", "shm-not-memory-backed"},
    {"two volumes at /dev/shm", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: [{name: a, emptyDir: {medium: Memory}}, {name: b, emptyDir: {medium: Memory}}]\n"
     "  containers: [{name: t, volumeMounts: [{name: a, mountPath: /dev/shm}]},"
     " {name: u, volumeMounts: [{name: b, mountPath: /dev/shm}]}]",
     Verdict::kDeny, "containers mount different volumes at /dev/shm (a, b)", "object-invalid"},
    {"undeclared volume", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: [{name: t, volumeMounts: [{name: ghost, mountPath: /dev/shm}]}]", Verdict::kDeny,
     "not declared in spec.volumes", "shm-not-memory-backed"},
    {"containers as a mapping", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: {name: t}", Verdict::kDeny, "/spec/containers: must be a list of containers", "object-invalid"},
    {"templated GPU count", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: $GPUS}}}]", Verdict::kDeny,
     "/spec/containers/0/resources/limits/nvidia.com/gpu: \"$GPUS\" is not a valid quantity", "object-invalid"},
    {"null GPU count is zero", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: , memory: 1Gi}}}]", Verdict::kPatch,
     "1 proc from default", "shm-plan"},
    {"volumes not a list", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: {dshm: {}}\n  containers: [{name: t}]", Verdict::kDeny, "/spec/volumes: must be a list",
     "object-invalid"},
};

TEST_CASE("EvaluatePod gives each pod its verdict and a reason that names the field", "[pod_evaluation]") {
  for (const auto& c : kCases) {
    CAPTURE(c.name);
    PodEvaluation pe = EvaluateOnlyPod(PodWith(c.annotations, c.spec));
    CHECK(pe.verdict == c.verdict);
    CHECK_THAT(Reasons(pe), Catch::Contains(c.reason));
    CHECK(CheckSaying(pe, c.reason) == c.check);
    CHECK(pe.path == "/spec");
    CHECK(pe.label == "pod");
  }
}

TEST_CASE("EvaluatePod reports the memory left for the processes", "[pod_evaluation]") {
  PodEvaluation pe =
      EvaluateOnlyPod(PodWith("{shmguard.io/num-workers: \"8\", shmguard.io/batch-bytes: 160Mi}",
                              "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]"));
  CHECK(pe.verdict == Verdict::kPatch);
  CHECK(pe.memory_limit_bytes == 64ll << 30);
  CHECK(pe.required_bytes == 14078ll << 20);
  CHECK_FALSE(pe.estimated);
  CHECK_THAT(Reasons(pe), Catch::Contains("memory limit 64Gi leaves 51458Mi for the processes"));
}

TEST_CASE("EvaluatePod follows the rule's requireAnnotations and the policy's unannotated mode", "[pod_evaluation]") {
  const json gpu_pod = PodWith("{}", kGpuSpec);
  Policy policy;
  PodEvaluation estimated = EvaluateOnlyPod(gpu_pod, policy);
  CHECK(estimated.verdict == Verdict::kPatch);
  CHECK(estimated.estimated);
  policy.unannotated.mode = UnannotatedMode::kLeave;
  PodEvaluation left = EvaluateOnlyPod(gpu_pod, policy);
  CHECK(left.verdict == Verdict::kOk);
  CHECK(left.patch.empty());
  CHECK_THAT(Reasons(left), Catch::Contains("the policy leaves such GPU pods as they are"));
  policy.namespaces = {{{"*"}, NamespaceMode::kEnforce, true, PodSecurityLevel::kPrivileged}};
  PodEvaluation required = EvaluateOnlyPod(gpu_pod, policy);
  CHECK(required.verdict == Verdict::kDeny);
  CHECK_THAT(Reasons(required), Catch::Contains("must declare shmguard.io/num-workers"));
  CHECK(EvaluateOnlyPod(PodWith("{}", "  containers: [{name: t}]"), policy).verdict == Verdict::kOk);  // no GPUs
}

}  // namespace
}  // namespace shmguard
