// ReadClaimDevices, ClaimIndex and ResolveClaimGpus: the GPUs a pod's containers get through
// resource claims, and Evaluate sizing such a pod when the claims are known.
#include "core/facts/resource_claims.h"

#include <catch2/catch.hpp>

#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

const std::vector<std::string> kClasses = Policy{}.gpu_device_classes;

TEST_CASE("ReadClaimDevices reads v1's exactly, v1beta1's fields and firstAvailable", "[resource_claims]") {
  struct Case {
    std::string name, yaml;
    int64_t gpus;
  };
  const std::vector<Case> cases = {
      {"v1 template, count 8",
       "{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: t}, spec: {spec: {devices: "
       "{requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, count: 8}}]}}}}",
       8},
      {"v1beta1 claim, no count",
       "{apiVersion: resource.k8s.io/v1beta1, kind: ResourceClaim, metadata: {name: c}, spec: {devices: {requests: "
       "[{name: g, deviceClassName: gpu.amd.com}]}}}",
       1},
      {"allocationMode All counts 1",
       "{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c}, spec: {devices: {requests: [{name: "
       "g, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All}}]}}}",
       1},
      {"a GPU and a NIC",
       "{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c}, spec: {devices: {requests: [{name: "
       "g, exactly: {deviceClassName: mig.nvidia.com, count: 2}}, {name: n, exactly: {deviceClassName: dranet.net, "
       "count: 2}}]}}}",
       2},
      // Counts of 1 and 2^63-1: the sum stops at the cap, it never wraps into "no GPUs".
      {"counts that would wrap",
       "{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: t}, spec: {spec: {devices: "
       "{requests: [{name: a, exactly: {deviceClassName: gpu.nvidia.com, count: 1}}, {name: b, exactly: "
       "{deviceClassName: gpu.nvidia.com, count: 9223372036854775807}}]}}}}",
       kMaxClaimGpus},
      {"firstAvailable: its first alternative",
       "{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c}, spec: {devices: {requests: [{name: "
       "g, firstAvailable: [{name: big, deviceClassName: gpu.nvidia.com, count: 4}, {name: small, deviceClassName: "
       "gpu.nvidia.com, count: 1}]}]}}}",
       4},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const json o = test::Yaml(c.yaml);
      auto devices = ReadClaimDevices(JsonNode(o));
      REQUIRE(devices);
      CHECK(ClaimGpus(*devices, kClasses) == c.gpus);
    }
  }
  const json pod = test::Yaml("{apiVersion: v1, kind: Pod, metadata: {name: p}}");
  CHECK_FALSE(ReadClaimDevices(JsonNode(pod)));
}

TEST_CASE("Evaluate sizes a pod whose container gets its GPUs from a known claim template", "[resource_claims]") {
  const json tpl = test::Yaml(
      "{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: eight, namespace: ml}, spec: "
      "{spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, count: 8}}]}}}}");
  const json pod = test::Yaml(R"(apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  resourceClaims: [{name: gpus, resourceClaimTemplateName: eight}]
  containers:
  - {name: train, command: [torchrun, --nproc_per_node=8, t.py], resources: {claims: [{name: gpus}], limits: {memory: 256Gi}}}
  - {name: sidecar, resources: {limits: {memory: 1Gi}}}
)");
  ClaimIndex index;
  REQUIRE(index.Add(JsonNode(tpl)));
  CHECK_FALSE(index.Add(JsonNode(pod)));
  // Without the template its GPUs are unknown: sized from the launch, with claims-unknown.
  const Evaluation without = Evaluate(JsonNode(pod), Policy{});
  CHECK(without.verdict == Verdict::kPatch);
  CHECK(std::any_of(without.pods[0].findings.begin(), without.pods[0].findings.end(),
                    [](const Finding& f) { return f.check == Check::kClaimsUnknown; }));
  const Evaluation with = Evaluate(JsonNode(pod), Policy{}, {.claims = &index});
  CHECK(with.verdict == Verdict::kPatch);
  REQUIRE(with.pods.size() == 1);
  REQUIRE(with.pods[0].plan);
  CHECK(with.pods[0].plan->inputs.procs == 8);
  // Another namespace's template of the same name is not this pod's: unknown there.
  const Evaluation elsewhere = Evaluate(JsonNode(pod), Policy{}, {.namespace_name = "team-b", .claims = &index});
  CHECK(std::any_of(elsewhere.pods[0].findings.begin(), elsewhere.pods[0].findings.end(),
                    [](const Finding& f) { return f.check == Check::kClaimsUnknown; }));
  // A policy that does not count gpu.nvidia.com as GPUs.
  Policy nics;
  nics.gpu_device_classes = {"dranet.net"};
  CHECK(Evaluate(JsonNode(pod), nics, {.claims = &index}).verdict == Verdict::kOk);
}

// A pod whose GPUs come through a claim template the input does not hold: its GPUs are unknown,
// which a warning says, naming the template; the launch's processes size it.
TEST_CASE("Evaluate warns of claims it does not know, and sizes the pod from its launch", "[resource_claims]") {
  const json pod = test::Yaml(R"(apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  resourceClaims: [{name: gpus, resourceClaimTemplateName: eight-gpus}]
  containers:
  - name: train
    command: [torchrun, --nproc_per_node=8, train.py]
    resources: {claims: [{name: gpus}], limits: {memory: 64Gi}}
)");
  const Evaluation ev = Evaluate(pod, Policy{});
  REQUIRE(ev.pods.size() == 1);
  const Finding* unknown = nullptr;
  for (const auto& f : ev.pods[0].findings) {
    if (f.check == Check::kClaimsUnknown) unknown = &f;
  }
  REQUIRE(unknown);
  CHECK(unknown->Value("claims") == "ResourceClaimTemplate eight-gpus");
  CHECK(unknown->Number("gpus") == 8);
  CHECK(ev.verdict == Verdict::kPatch);  // sized as an 8-GPU pod, not "ok, no GPUs" at 64Mi
  CHECK(ev.pods[0].required_bytes >= int64_t{1} << 30);

  // Known, the template's devices count, and nothing is unknown.
  ClaimIndex index;
  index.Add(
      JsonNode(test::Yaml("{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: "
                          "eight-gpus, namespace: ml}, spec: {spec: {devices: {requests: [{name: g, exactly: "
                          "{deviceClassName: gpu.nvidia.com, count: 8}}]}}}}")));
  const Evaluation known = Evaluate(pod, Policy{}, {.claims = &index});
  for (const auto& f : known.pods[0].findings) CHECK(f.check != Check::kClaimsUnknown);
  CHECK(known.pods[0].required_bytes == ev.pods[0].required_bytes);
}

}  // namespace
}  // namespace shmguard
