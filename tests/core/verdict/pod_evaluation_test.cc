// EvaluatePod: one pod template's verdict and the reason behind it, naming the field a user
// must change (docs/sources.md §1, §3, §5).
#include "core/verdict/internal/pod_evaluation.h"

#include <catch2/catch.hpp>

#include "core/patch/shm_remedy.h"
#include "test_util.h"

namespace shmguard::verdict {
namespace {

using nlohmann::json;
using test::Yaml;

json PodWith(const std::string& annotations, const std::string& spec) {
  return Yaml("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: " + annotations + "\nspec:\n" + spec);
}

// The verdict of the only pod template of `object` under the policy's rule for team-a.
PodEvaluation EvaluateOnlyPod(const json& object, const Policy& policy = Policy{}) {
  Workload w = test::OnlyTemplate(object);
  return EvaluatePod({w.templates[0], w, MatchNamespace(policy, "team-a"), policy, PodContext{}});
}

// The first finding of the check with that ID; REQUIREd.
const Finding& FindingWithId(const PodEvaluation& pe, std::string_view id) {
  const Finding* f = test::FindingOf(pe.findings, *FindCheck(id));
  REQUIRE(f != nullptr);
  return *f;
}

// A finding's number (in decimal) or value of that name.
std::string Carried(const Finding& f, std::string_view key) {
  return InfoOf(f.check).CarriesNumber(key) ? std::to_string(f.Number(key)) : f.Value(key);
}

struct VerdictCase {
  const char* name;
  const char* annotations;
  const char* spec;
  Verdict verdict;
  const char* check;  // the ID of the finding that says why
  const char* key;    // one of its numbers or values ("": none)
  const char* says;   // that number, or a substring of that value
};

const char* kGpuSpec = "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}}]";

const VerdictCase kCases[] = {
    {"no annotations", "{}", kGpuSpec, Verdict::kPatch, "shm-below-need", "current", "64Mi (container default)"},
    {"opted out", "{shmguard.io/mode: skip, shmguard.io/num-workers: \"8\"}", kGpuSpec, Verdict::kSkip, "opted-out", "",
     ""},
    {"unknown mode", "{shmguard.io/mode: always}", kGpuSpec, Verdict::kDeny, "annotation-invalid", "error",
     "only value is \"skip\""},
    {"needs patch", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kPatch,
     "shm-plan", "required_bytes", "1737490432"},
    {"workers zero needs no batch bytes", "{shmguard.io/num-workers: \"0\"}", kGpuSpec, Verdict::kPatch, "shm-plan",
     "floor_applied", "1"},
    {"batch bytes without workers", "{shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kDeny, "annotation-invalid",
     "annotation", "shmguard.io/num-workers"},
    {"workers without batch bytes", "{shmguard.io/num-workers: \"4\"}", kGpuSpec, Verdict::kDeny, "annotation-invalid",
     "error", "is required when num-workers > 0"},
    {"unquoted number", "{shmguard.io/num-workers: 4, shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kDeny,
     "annotation-invalid", "error", "quote it (\"4\")"},
    {"negative workers", "{shmguard.io/num-workers: \"-1\", shmguard.io/batch-bytes: 64Mi}", kGpuSpec, Verdict::kDeny,
     "annotation-invalid", "error", "must be a whole number from 0 to 4096"},
    {"huge workers", "{shmguard.io/num-workers: \"99999999999999999999\", shmguard.io/batch-bytes: 1Mi}", kGpuSpec,
     Verdict::kDeny, "annotation-invalid", "error", "must be a whole number"},
    {"bad quantity", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 64MB}", kGpuSpec, Verdict::kDeny,
     "annotation-invalid", "error", "\"64MB\" is not a valid quantity"},
    {"negative batch", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: \"-1Mi\"}", kGpuSpec, Verdict::kDeny,
     "annotation-invalid", "error", "must not be negative"},
    {"overflow", "{shmguard.io/num-workers: \"4096\", shmguard.io/batch-bytes: 4Ei}", kGpuSpec, Verdict::kDeny,
     "object-invalid", "error", "exceeds 2^63-1 bytes"},
    {"quantity beyond int64", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: \"1e19\"}", kGpuSpec,
     Verdict::kDeny, "annotation-invalid", "error", "larger than 2^63-1"},
    {"unquoted float", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1e19}", kGpuSpec, Verdict::kDeny,
     "annotation-invalid", "error", "quote it (\"1e+19\")"},
    {"prefetch zero",
     "{shmguard.io/num-workers: \"1\", shmguard.io/prefetch-factor: \"0\", shmguard.io/batch-bytes: 1Mi}", kGpuSpec,
     Verdict::kDeny, "annotation-invalid", "annotation", "shmguard.io/prefetch-factor"},
    {"above memory limit", "{shmguard.io/num-workers: \"16\", shmguard.io/batch-bytes: 1Gi}", kGpuSpec, Verdict::kDeny,
     "shm-over-memory-limit", "limit_source", "sum of container limits"},
    {"above max fraction", "{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 2Gi}", kGpuSpec, Verdict::kDeny,
     "shm-over-memory-limit", "max_fraction_ppm", "500000"},
    {"hostPath /dev/shm", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: [{name: shm, hostPath: {path: /dev/shm}}]\n"
     "  containers: [{name: t, volumeMounts: [{name: shm, mountPath: /dev/shm}]}]",
     Verdict::kDeny, "shm-not-memory-backed", "mount", "hostPath /dev/shm"},
    {"disk emptyDir at /dev/shm", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: [{name: dshm, emptyDir: {}}]\n"
     "  containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]",
     Verdict::kDeny, "shm-not-memory-backed", "mount", "on the node's disk"},
    {"two volumes at /dev/shm", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: [{name: a, emptyDir: {medium: Memory}}, {name: b, emptyDir: {medium: Memory}}]\n"
     "  containers: [{name: t, volumeMounts: [{name: a, mountPath: /dev/shm}]},"
     " {name: u, volumeMounts: [{name: b, mountPath: /dev/shm}]}]",
     Verdict::kDeny, "object-invalid", "error", "containers mount different volumes at /dev/shm (a, b)"},
    {"undeclared volume", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: [{name: t, volumeMounts: [{name: ghost, mountPath: /dev/shm}]}]", Verdict::kDeny,
     "shm-not-memory-backed", "mount", "not declared in spec.volumes"},
    {"containers as a mapping", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: {name: t}", Verdict::kDeny, "object-invalid", "error", "must be a list of containers"},
    {"templated GPU count", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: $GPUS}}}]", Verdict::kDeny, "object-invalid",
     "error", "\"$GPUS\" is not a valid quantity"},
    {"null GPU count is zero", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: , memory: 1Gi}}}]", Verdict::kPatch, "shm-plan",
     "procs_source", "default"},
    {"volumes not a list", "{shmguard.io/num-workers: \"1\", shmguard.io/batch-bytes: 1Mi}",
     "  volumes: {dshm: {}}\n  containers: [{name: t}]", Verdict::kDeny, "object-invalid", "error", "must be a list"},
};

TEST_CASE("EvaluatePod gives each pod its verdict and the finding that says why", "[pod_evaluation]") {
  for (const auto& c : kCases) {
    CAPTURE(c.name);
    PodEvaluation pe = EvaluateOnlyPod(PodWith(c.annotations, c.spec));
    CHECK(pe.verdict == c.verdict);
    CAPTURE(test::Ids(pe.findings));
    const Finding& why = FindingWithId(pe, c.check);
    if (*c.key) CHECK_THAT(Carried(why, c.key), Catch::Contains(c.says));
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
  const Finding& headroom = FindingWithId(pe, "memory-headroom");
  CHECK(headroom.Number("memory_limit_bytes") == 64ll << 30);
  CHECK(headroom.Number("left_bytes") == 51458ll << 20);
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
  CHECK(test::Ids(left.findings) == std::vector<std::string>{"unannotated-left"});
  policy.namespaces = {{{"*"}, NamespaceMode::kEnforce, true, PodSecurityLevel::kPrivileged}};
  PodEvaluation required = EvaluateOnlyPod(gpu_pod, policy);
  CHECK(required.verdict == Verdict::kDeny);
  CHECK(FindingWithId(required, "annotations-required").severity == Severity::kError);
  CHECK(EvaluateOnlyPod(PodWith("{}", "  containers: [{name: t}]"), policy).verdict == Verdict::kOk);  // no GPUs
}

TEST_CASE("EvaluatePod flags a read-only /dev/shm: an error with DataLoader annotations, else a warning",
          "[pod_evaluation]") {
  const std::string spec = R"(
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
  containers:
  - name: trainer
    resources: {limits: {nvidia.com/gpu: 1, memory: 16Gi}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm, readOnly: true}]
)";
  Evaluation sized = Evaluate(test::Yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: "
                                         "{shmguard.io/num-workers: '2', shmguard.io/batch-bytes: 8Mi}}\nspec:" +
                                         spec),
                              Policy{}, {.namespace_name = "team-a"});
  const std::vector<Finding> all = sized.AllFindings();
  const Finding* f = test::FindingOf(all, Check::kShmReadOnly);
  REQUIRE(f != nullptr);
  CHECK(f->severity == Severity::kError);
  CHECK(f->pointer == "/spec/containers/0/volumeMounts");
  CHECK(f->Value("containers") == "trainer");
  CHECK(sized.verdict == Verdict::kDeny);
  Evaluation plain = Evaluate(test::Yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:" + spec), Policy{},
                              {.namespace_name = "team-a"});
  const std::vector<Finding> plain_all = plain.AllFindings();
  REQUIRE(test::FindingOf(plain_all, Check::kShmReadOnly) != nullptr);
  CHECK(test::FindingOf(plain_all, Check::kShmReadOnly)->severity == Severity::kWarning);
  CHECK(plain.verdict != Verdict::kDeny);
}

TEST_CASE("EvaluatePod refuses a negative size and a number out of range, naming the field", "[pod_evaluation]") {
  struct Case {
    const char* container;
    const char* pointer;
    const char* message;
  };
  const Case cases[] = {
      {"{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: -1Gi}}}",
       "/spec/containers/0/resources/limits/memory", "must not be negative"},
      {"{name: t, resources: {limits: {nvidia.com/gpu: 1e309}}}", "/spec/containers/0/resources/limits/nvidia.com~1gpu",
       "is a number out of range"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.container);
    Evaluation ev =
        Evaluate(test::Yaml(std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [") +
                            c.container + "]\n"),
                 Policy{}, {.namespace_name = "team-a"});
    CHECK(ev.verdict == Verdict::kDeny);
    const std::vector<Finding> all = ev.AllFindings();
    const Finding* f = test::FindingOf(all, Check::kObjectInvalid);
    REQUIRE(f != nullptr);
    CHECK(f->pointer == c.pointer);
    CHECK_THAT(f->Value("error"), Catch::Contains(c.message));
    CHECK_THAT(f->Value("error"), !Catch::Contains("null"));
  }
  // A negative sizeLimit no longer reads as "no sizeLimit".
  Evaluation limit = Evaluate(test::Yaml(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: -1Gi}}]
  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1}}, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
)"),
                              Policy{}, {.namespace_name = "team-a"});
  const std::vector<Finding> all = limit.AllFindings();
  REQUIRE(test::FindingOf(all, Check::kObjectInvalid) != nullptr);
  CHECK(test::FindingOf(all, Check::kObjectInvalid)->pointer == "/spec/volumes/0/emptyDir/sizeLimit");
}

}  // namespace
}  // namespace shmguard::verdict
