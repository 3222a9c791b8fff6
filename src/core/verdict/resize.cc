// EvaluateResize: a pod's new memory limit against the /dev/shm it has.
#include "core/verdict/resize.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/facts/pod_facts.h"
#include "core/patch/plan_annotation.h"
#include "core/sizing/memory_limit.h"
#include "core/values/int128.h"
#include "core/verdict/internal/ignore_annotation.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {
namespace {

// What one side of the resize has: its memory limit and its /dev/shm's size.
struct Sides {
  PodFacts facts;
  std::optional<int64_t> shm_bytes;  // nullopt: no memory-backed /dev/shm, or no size known
  std::string shm_source;            // "sizeLimit" or "shmguard.io/plan"
};

std::optional<Sides> Read(JsonNode pod, const Policy& policy) {
  auto workload = FindPodTemplates(pod);
  if (!workload || !workload->is_pod || workload->templates.size() != 1) return std::nullopt;
  auto facts = ReadPodFacts(workload->templates[0], policy);
  if (!facts) return std::nullopt;
  Sides s{std::move(*facts), std::nullopt, ""};
  const bool mounted = std::any_of(s.facts.containers.begin(), s.facts.containers.end(),
                                   [](const ContainerFacts& c) { return c.mounts_shm; });
  if (s.facts.shm.kind != ShmMountKind::kMemoryEmptyDir || !mounted) return s;
  if (s.facts.shm.size_limit) {
    s.shm_bytes = s.facts.shm.size_limit;
    s.shm_source = "sizeLimit";
  } else if (auto planned = PlannedShmBytes(pod)) {
    s.shm_bytes = planned;
    s.shm_source = kPlanAnnotation;
  }
  return s;
}

// The smallest memory limit that holds `shm` bytes under the fraction rule, in whole MiB.
int64_t MinimumLimit(int64_t shm, int64_t ppm) {
  constexpr int64_t kMi = int64_t{1} << 20;
  const Int128 bytes = (static_cast<Int128>(shm) * 1'000'000 + ppm - 1) / ppm;
  const Int128 rounded = (bytes + kMi - 1) / kMi * kMi;
  return static_cast<int64_t>(std::min<Int128>(rounded, INT64_MAX));
}

}  // namespace

Evaluation EvaluateResize(JsonNode old_pod, JsonNode new_pod, const Policy& policy, const EvaluateOptions& options) {
  Evaluation ev;
  ev.api_version = "v1";
  ev.kind = "Pod";
  ev.name = std::string(new_pod.Find("metadata").StringMember("name"));
  ev.namespace_name = std::string(options.namespace_name);
  ev.rule = MatchNamespace(policy, ev.namespace_name);
  if (ev.rule.mode == NamespaceMode::kOff) return ev;                                            // kSkip
  if (new_pod.Find("metadata").Find("annotations").Find(kModeAnnotation).Is("skip")) return ev;  // opted out
  auto now = Read(new_pod, policy);
  if (!now || !now->shm_bytes) return ev;
  ev.workload = true;
  ev.verdict = Verdict::kOk;
  // Before the resize, in bytes; 0 where there was no limit or no size known.
  auto before = Read(old_pod, policy);
  const int64_t was_limit = before ? before->facts.memory_limit_bytes.value_or(0) : 0;
  const int64_t was_shm = before ? before->shm_bytes.value_or(0) : 0;
  const int64_t limit = now->facts.memory_limit_bytes.value_or(0);
  const bool limit_fell = limit > 0 && (was_limit == 0 || limit < was_limit);
  const bool shm_grew = was_shm == 0 || *now->shm_bytes > was_shm;
  if (!limit_fell && !shm_grew) return ev;
  auto denial = MemoryLimitDenial(*now->shm_bytes, now->facts, policy, ShmUse{.volume = now->facts.shm.volume_name});
  if (!denial) return ev;
  Finding f(Check::kResizeBelowShm, now->facts.memory_limit_pointer);
  f.Num("shm_bytes", *now->shm_bytes)
      .Num("memory_limit_bytes", limit)
      .Num("max_fraction_ppm", policy.max_fraction_ppm)
      .Num("minimum_bytes", MinimumLimit(*now->shm_bytes, policy.max_fraction_ppm))
      .Val("volume", now->facts.shm.volume_name)
      .Val("limit_source", now->facts.memory_limit_source)
      .Val("shm_source", now->shm_source);
  if (was_limit > 0) f.Num("was_memory_limit_bytes", was_limit);
  // Exempted as at creation: the caller's, the rule's, and the pod's own annotation.
  std::vector<Check> exempt = options.exemptions.checks;
  exempt.insert(exempt.end(), ev.rule.ignore.begin(), ev.rule.ignore.end());
  std::vector<Finding> annotation_findings;
  const std::vector<Check> own =
      verdict::ReadIgnore(new_pod.Find("metadata").Find("annotations").Find(kIgnoreAnnotation),
                          "/metadata/annotations/shmguard.io~1ignore", annotation_findings);
  exempt.insert(exempt.end(), own.begin(), own.end());
  f.suppressed = std::find(exempt.begin(), exempt.end(), f.check) != exempt.end();
  if (!f.suppressed) ev.verdict = Verdict::kDeny;
  ev.findings = std::move(annotation_findings);
  ev.findings.push_back(std::move(f));
  return ev;
}

}  // namespace shmguard
