// KServe's LLMInferenceService: its pod specs as written, in groups of its parallelism, each
// pod patched when it is created.
#include <catch2/catch.hpp>

#include "core/verdict/evaluation.h"
#include "core/workloads/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("An LLMInferenceService is its pod specs as written, in groups of its parallelism, patched when created",
          "[inference_service]") {
  const struct {
    const char* parallelism;
    int64_t pods;
  } cases[] = {
      {"{tensor: 4, data: 8, dataLocal: 2}", 4},  // data / dataLocal
      {"{tensor: 4, dataLocal: 2}", 1},           // data parallel, one replica of two locally
      {"{tensor: 8, pipeline: 3}", 3},
      {"{tensor: 8}", 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.parallelism);
    json service = test::Yaml(std::string(R"(apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: llm}
spec:
  annotations: {shmguard.io/procs-per-pod: "4"}
  parallelism: )") + c.parallelism +
                              R"(
  template: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]}
  worker: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]}
  prefill:
    template: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 1}}}]}
)");
    auto w = FindPodTemplates(service);
    INFO((w ? "" : w.error().ToString()));
    REQUIRE(w.has_value());
    REQUIRE(w->templates.size() == 3);
    CHECK(w->templates[0].label == "template");
    CHECK(w->templates[1].spec_pointer == "/spec/worker");
    CHECK(w->templates[2].label == "prefill");
    CHECK(w->templates[0].pods_together == c.pods);
    CHECK(w->templates[1].pods_together == c.pods);
    CHECK(w->templates[2].pods_together == 1);  // the prefill has no worker: a Deployment
    CHECK(w->templates[0].annotations.count("shmguard.io/procs-per-pod") == 1);  // spec.annotations reach its pods
    CHECK(w->templates[2].annotations.count("shmguard.io/procs-per-pod") == 0);  // not the prefill's
    for (const PodTemplate& t : w->templates) {
      CHECK_FALSE(t.patchable);
      CHECK_FALSE(t.shm_unknown.empty());
    }
  }
  // A preset's command is a Go template: it is not read as a launch, and nothing is denied.
  json preset = test::Yaml(R"y(apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceServiceConfig
metadata: {name: preset}
spec:
  template:
    containers:
    - name: main
      command: [vllm, serve, m, "--tensor-parallel-size={{ .Spec.Parallelism.Tensor }}"]
      resources: {limits: {nvidia.com/gpu: 2}}
)y");
  Evaluation ev = Evaluate(preset, Policy{}, {});
  CHECK(ev.verdict == Verdict::kOk);
  REQUIRE(ev.pods.size() == 1);
  CHECK(test::FindingOf(ev.pods[0].findings, Check::kSizedFromServerLaunch) == nullptr);
  CHECK(test::FindingOf(ev.AllFindings(), Check::kObjectInvalid) == nullptr);
  json bad = test::Yaml(
      "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: x}\n"
      "spec: {prefill: {template: []}}");
  auto w = FindPodTemplates(bad);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().where.pointer == "/spec/prefill/template");
}

}  // namespace
}  // namespace shmguard
