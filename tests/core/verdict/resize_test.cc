// EvaluateResize, and Decide on an UPDATE of a Pod's resize subresource.
#include "core/verdict/resize.h"

#include <catch2/catch.hpp>

#include "core/verdict/admission.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

// A patched GPU pod: 16Gi of /dev/shm under a 64Gi limit (the default fraction, 0.5, allows
// 32Gi), its memory limit `limit` on the one container.
json Pod(const std::string& limit, const std::string& size_limit = "16Gi") {
  json pod = test::Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: trainer, annotations: {shmguard.io/plan: '{"gpus":4,"required":"12Gi"}'}}
spec:
  containers:
  - name: t
    resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi, cpu: "8"}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
)");
  pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = limit;
  if (!size_limit.empty()) pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] = size_limit;
  return pod;
}

Evaluation Resize(const json& from, const json& to, const Policy& policy = Policy{}, const std::string& ns = "ml-a") {
  return EvaluateResize(from, to, policy, {.namespace_name = ns});
}

TEST_CASE("EvaluateResize refuses a limit shrunk below what /dev/shm takes, and nothing else", "[resize]") {
  json cpu_only = Pod("64Gi");
  cpu_only["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4";
  json no_shm = Pod("20Gi");
  no_shm["spec"].erase("volumes");
  no_shm["spec"]["containers"][0].erase("volumeMounts");
  json pod_level = Pod("64Gi");
  pod_level["spec"]["resources"] = {{"limits", {{"memory", "24Gi"}}}};
  json unplanned = Pod("20Gi", "");
  unplanned["metadata"]["annotations"].erase("shmguard.io/plan");
  json opted_out = Pod("20Gi");
  opted_out["metadata"]["annotations"]["shmguard.io/mode"] = "skip";
  json unmounted = Pod("20Gi");
  unmounted["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] = "/scratch";
  const struct {
    const char* name;
    json from, to;
    Verdict want;
  } cases[] = {
      {"a limit shrunk to 20Gi leaves 16Gi over half of it", Pod("64Gi"), Pod("20Gi"), Verdict::kDeny},
      {"a limit shrunk to exactly twice /dev/shm fits", Pod("64Gi"), Pod("32Gi"), Verdict::kOk},
      {"a grown limit passes", Pod("20Gi"), Pod("24Gi"), Verdict::kOk},
      {"a resize of the CPU only passes", Pod("64Gi"), cpu_only, Verdict::kOk},
      {"a pod without a memory /dev/shm is not shmguard's", Pod("64Gi"), no_shm, Verdict::kSkip},
      {"a pod-level limit shrunk below /dev/shm's", Pod("64Gi"), pod_level, Verdict::kDeny},
      {"without a sizeLimit, the plan's size", Pod("64Gi", ""), Pod("20Gi", ""), Verdict::kDeny},
      {"without a sizeLimit, within the plan's size", Pod("64Gi", ""), Pod("24Gi", ""), Verdict::kOk},
      {"without a sizeLimit or a plan, no size known", Pod("64Gi", ""), unplanned, Verdict::kSkip},
      {"a sizeLimit grown past the limit's half (KEP-6030)", Pod("64Gi"), Pod("64Gi", "40Gi"), Verdict::kDeny},
      {"an opted-out pod", Pod("64Gi"), opted_out, Verdict::kSkip},
      {"a memory volume not mounted at /dev/shm", Pod("64Gi"), unmounted, Verdict::kSkip},
  };
  for (const auto& c : cases) {
    SECTION(c.name) { CHECK(Resize(c.from, c.to).verdict == c.want); }
  }
}

TEST_CASE("EvaluateResize says the numbers: the new limit, the old, and the least that fits", "[resize]") {
  Evaluation ev = Resize(Pod("64Gi"), Pod("20Gi"));
  REQUIRE(ev.findings.size() == 1);
  const Finding& f = ev.findings[0];
  CHECK(f.check == Check::kResizeBelowShm);
  CHECK(f.pointer == "/spec/containers/0/resources/limits/memory");
  CHECK(f.Number("shm_bytes") == 16 * kGi);
  CHECK(f.Number("memory_limit_bytes") == 20 * kGi);
  CHECK(f.Number("was_memory_limit_bytes") == 64 * kGi);
  CHECK(f.Number("minimum_bytes") == 32 * kGi);
  CHECK(f.Value("shm_source") == "sizeLimit");
  CHECK(f.Value("volume") == "dshm");
  // The plan's size, and a fraction that does not divide it: the least limit rounded up to MiB.
  Policy third;
  third.max_fraction_ppm = 333'333;
  Evaluation planned = Resize(Pod("64Gi", ""), Pod("20Gi", ""), third);
  REQUIRE(planned.findings.size() == 1);
  CHECK(planned.findings[0].Value("shm_source") == "shmguard.io/plan");
  CHECK(planned.findings[0].Number("minimum_bytes") == 36865 * kMi);  // 12Gi / 0.333333, up to MiB
}

TEST_CASE("EvaluateResize: off namespaces and exemptions", "[resize]") {
  Policy policy;
  policy.namespaces = {{.match = {"ml-*"}, .mode = NamespaceMode::kEnforce},
                       {.match = {"quiet"}, .mode = NamespaceMode::kOff},
                       {.match = {"lenient"}, .mode = NamespaceMode::kWarn, .ignore = {Check::kResizeBelowShm}}};
  CHECK(Resize(Pod("64Gi"), Pod("20Gi"), policy, "quiet").verdict == Verdict::kSkip);
  Evaluation lenient = Resize(Pod("64Gi"), Pod("20Gi"), policy, "lenient");
  CHECK(lenient.verdict == Verdict::kOk);
  REQUIRE(lenient.findings.size() == 1);
  CHECK(lenient.findings[0].suppressed);
  json ignored = Pod("20Gi");
  ignored["metadata"]["annotations"]["shmguard.io/ignore"] = "resize-below-shm";
  CHECK(Resize(Pod("64Gi"), ignored, policy).verdict == Verdict::kOk);
  json typo = Pod("20Gi");
  typo["metadata"]["annotations"]["shmguard.io/ignore"] = "resize-below-sh";
  Evaluation typo_ev = Resize(Pod("64Gi"), typo, policy);
  CHECK(typo_ev.verdict == Verdict::kDeny);
  CHECK(test::Ids(typo_ev.findings) == std::vector<std::string>{"annotation-invalid", "resize-below-shm"});
}

json ResizeReview(const json& from, const json& to, const std::string& ns) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "6f1c2a43-0c57-4c56-9a7f-3c1f4c0a9e11"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"subResource", "resize"},
            {"namespace", ns},
            {"name", "trainer"},
            {"operation", "UPDATE"},
            {"object", to},
            {"oldObject", from}}}};
}

TEST_CASE("Decide: a resize is denied by /validate in enforce, warned elsewhere, never mutated",
          "[resize][admission]") {
  auto decide = [](const json& review, Face face, bool enforce_label = false) {
    auto request = ParseReview(review);
    REQUIRE(request.has_value());
    return Decide(*request, {.policy = Policy{}, .face = face, .labels = {.enforce = enforce_label}});
  };
  const json shrink_enforce = ResizeReview(Pod("64Gi"), Pod("20Gi"), "ml-a");
  const json shrink_warn = ResizeReview(Pod("64Gi"), Pod("20Gi"), "team-a");
  const json grow = ResizeReview(Pod("20Gi"), Pod("64Gi"), "ml-a");

  auto parsed = ParseReview(shrink_enforce);
  REQUIRE(parsed.has_value());
  CHECK(parsed->sub_resource == "resize");
  CHECK(parsed->old_object.Find("spec").Find("containers").IsArray());

  Decision denied = decide(shrink_enforce, Face::kValidate);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.code == 403);
  CHECK(test::Ids(denied.findings) == std::vector<std::string>{"resize-below-shm"});
  CHECK(denied.name == "trainer");

  Decision warned = decide(shrink_warn, Face::kValidate);
  CHECK(warned.allowed);
  CHECK(test::Ids(warned.findings) == std::vector<std::string>{"resize-below-shm"});
  // The namespace labelled for enforcement denies it where the policy only warns.
  CHECK_FALSE(decide(shrink_warn, Face::kValidate, true).allowed);

  Decision grown = decide(grow, Face::kValidate);
  CHECK(grown.allowed);
  CHECK(grown.findings.empty());

  // /mutate is not where a resize is judged: allowed, untouched, nothing said.
  Decision mutate = decide(shrink_enforce, Face::kMutate);
  CHECK(mutate.allowed);
  CHECK(mutate.patch.empty());
  CHECK(mutate.findings.empty());

  // Any other UPDATE (the status, the object itself) is not looked at.
  json status = shrink_enforce;
  status["request"]["subResource"] = "status";
  CHECK(decide(status, Face::kValidate).allowed);
  CHECK(decide(status, Face::kValidate).findings.empty());
}

}  // namespace
}  // namespace shmguard
