// FindShmVolumes and ShmWatch: a running pod's /dev/shm, as the node agent sees it.
#include "core/node/shm_watch.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/facts/pod_facts.h"
#include "core/facts/shm_mount.h"
#include "core/patch/policy_floor.h"
#include "core/values/compact_json.h"
#include "core/values/int128.h"
#include "core/values/quantity.h"
#include "core/verdict/evaluation.h"
#include "core/verdict/resize.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

std::vector<ShmVolume> FindShmVolumes(JsonNode pod) {
  // The volumes mounted at /dev/shm, in one pass over the mounts, then one over the volumes.
  JsonNode spec = pod.Find("spec");
  std::unordered_set<std::string_view> at_shm;
  for (const char* list : {"containers", "initContainers"}) {
    for (JsonNode c : spec.Find(list).Items()) {
      for (JsonNode m : c.Find("volumeMounts").Items()) {
        if (IsShmMountPath(m.StringMember("mountPath"))) at_shm.insert(m.StringMember("name"));
      }
    }
  }
  std::vector<ShmVolume> out;
  if (at_shm.empty()) return out;
  for (JsonNode v : spec.Find("volumes").Items()) {
    if (!v.Find("emptyDir").Find("medium").Is("Memory")) continue;
    std::string_view name = v.StringMember("name");
    if (!name.empty() && at_shm.count(name)) out.push_back({std::string(name)});
  }
  return out;
}

namespace {
Growth Unreadable() {
  Growth g;
  g.refusal = GrowthRefusal::kUnreadable;
  return g;
}
}  // namespace

Growth GrowthTarget(JsonNode pod, std::string_view volume, const Policy& policy) {
  Growth g;
  auto workload = FindPodTemplates(pod);
  if (!workload || workload->templates.size() != 1) return Unreadable();
  const PodTemplate& t = workload->templates[0];
  auto facts = ReadPodFacts(t, policy);
  if (!facts) return Unreadable();
  g.memory_limit_bytes = facts->memory_limit_bytes;
  JsonNode size_limit;
  bool found = false;
  for (JsonNode v : t.spec.Find("volumes").Items()) {
    if (v.StringMember("name") != volume) continue;
    found = true;
    size_limit = v.Find("emptyDir").Find("sizeLimit");
  }
  if (!found) return Unreadable();
  if (!size_limit) {
    g.refusal = GrowthRefusal::kNoSizeLimit;
    return g;
  }
  auto from = ParseBytes(size_limit.IsString() ? std::string(size_limit.String()) : size_limit.Dump(), "sizeLimit");
  if (!from) return Unreadable();
  g.from_bytes = *from;
  if (!g.memory_limit_bytes) {
    g.refusal = GrowthRefusal::kNoMemoryLimit;
    return g;
  }
  g.cap_bytes = static_cast<int64_t>(static_cast<Int128>(*g.memory_limit_bytes) * policy.max_fraction_ppm / 1'000'000);
  constexpr int64_t kMi = 1 << 20;
  g.cap_bytes -= g.cap_bytes % kMi;
  g.to_bytes = std::min(g.cap_bytes, g.from_bytes > g.cap_bytes / 2 ? g.cap_bytes : 2 * g.from_bytes);
  if (g.to_bytes <= g.from_bytes) g.refusal = GrowthRefusal::kNoRoom;
  return g;
}

std::optional<Finding> FindLimitBelowShm(JsonNode pod, const Policy& policy) {
  std::string ns(pod.Find("metadata").StringMember("namespace"));
  Evaluation ev = EvaluateResize(JsonNode(), pod, policy, {.namespace_name = ns});
  if (ev.verdict != Verdict::kDeny) return std::nullopt;
  for (Finding& f : ev.findings) {
    if (f.check == Check::kResizeBelowShm) return std::move(f);
  }
  return std::nullopt;
}

std::string ResizeVolumePatch(std::string_view volume, int64_t bytes) {
  return R"({"spec":{"volumes":[{"name":)" + JsonQuoted(volume) + R"(,"emptyDir":{"medium":"Memory","sizeLimit":")" +
         FormatBytes(bytes) + R"("}}]}})";
}

bool ShmWatch::Observe(uint64_t used, uint64_t size, uint64_t leaked) {
  if (size == 0) return false;
  used_ = used;
  size_ = size;
  leaked_ = std::min(leaked, used);
  peak_ = std::max(peak_, used - leaked_);
  const double fraction = static_cast<double>(used) / static_cast<double>(size);
  if (!above_ && fraction >= threshold_) {
    above_ = true;
    return true;
  }
  if (above_ && fraction < threshold_ - kRearm) above_ = false;
  return false;
}

std::optional<Unpatched> FindUnpatched(JsonNode pod, const Policy& policy) {
  const Evaluation ev = Evaluate(pod, policy, {.detail = Detail::kProblems});
  if (ev.verdict != Verdict::kPatch || ev.pods.size() != 1) return std::nullopt;
  const PodEvaluation& pe = ev.pods[0];
  const bool below = std::any_of(pe.findings.begin(), pe.findings.end(),
                                 [](const Finding& f) { return f.check == Check::kShmBelowNeed && !f.suppressed; });
  if (!below) return std::nullopt;
  // The webhook's own plan stands: it may be a learned size below the formula's.
  JsonNode plan = pod.Find("metadata").Find("annotations").Find(kPlanAnnotation);
  const bool policy_made = ReadPolicyFloor(pod).has_value();
  if (plan.IsString() && !policy_made) return std::nullopt;
  Unpatched u;
  u.required_bytes = pe.required_bytes;
  u.current = pe.current_shm;
  u.policy_made = policy_made;
  return u;
}

}  // namespace shmguard
