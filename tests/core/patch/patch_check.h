// What the patch tests share: a pod evaluated, patched and evaluated again, and the findings
// of one left alone.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/verdict/evaluation.h"

namespace shmguard::patch_test {

using nlohmann::json;

// Evaluates, applies the patch, checks idempotence; returns the patched object.
inline json PatchAndRecheck(const json& object, const Policy& policy = Policy{}, const char* ns = "team-a") {
  Evaluation ev = Evaluate(object, policy, {.namespace_name = ns});
  INFO(ev.patch.Text());
  REQUIRE(ev.verdict == Verdict::kPatch);
  json patched = object.patch(ev.patch.ToJson());
  Evaluation again = Evaluate(patched, policy, {.namespace_name = ns});
  INFO(patched.dump(2));
  CHECK(again.patch.empty());
  CHECK(again.verdict == Verdict::kOk);
  return patched;
}

inline constexpr const char* kBarePod = R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 160Mi}
spec:
  containers:
  - name: trainer
    image: x
    resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}
  - name: logger
    image: y
)";

inline Evaluation Unpatched(const json& pod, const Policy& policy = Policy{}, const char* ns = "team-a") {
  Evaluation ev = Evaluate(pod, policy, {.namespace_name = ns});
  INFO(ev.patch.Text());
  CHECK(ev.verdict == Verdict::kOk);
  CHECK(ev.patch.empty());
  return ev;
}

inline const Finding* FindingOf(const Evaluation& ev, Check c) {
  for (const auto& pe : ev.pods) {
    for (const auto& f : pe.findings) {
      if (f.check == c) return &f;
    }
  }
  return nullptr;
}

}  // namespace shmguard::patch_test
