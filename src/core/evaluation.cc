// Evaluate: discovery -> facts -> plan -> memory check -> patch, for every pod template.
#include "shmguard/evaluation.h"

#include <algorithm>

#include "shmguard/pod_facts.h"
#include "shmguard/pod_templates.h"
#include "shmguard/int128.h"
#include "shmguard/quantity.h"
#include "shmguard/shm_patch.h"

namespace shmguard {
namespace {

bool Has(const Annotations& a, const char* key) {
  auto it = a.find(key);
  return it != a.end() && it->second;
}

// A deny whose reason is `e`, naming the field.
void DenyWith(PodEvaluation& pe, const Error& e) {
  pe.verdict = Verdict::kDeny;
  pe.reasons.push_back(e.ToString());
}

struct SizingInputs {
  int64_t workers = 0, prefetch = 0, batch_bytes = 0;
};

Result<SizingInputs> ReadSizing(const PodTemplate& t, const Policy& policy) {
  SizingInputs in;
  auto workers = ReadCountAnnotation(t.annotations, kNumWorkersAnnotation, 0, 4096);
  if (!workers) return workers.error();
  if (!*workers) {
    return MakeError(Code::kInvalidInput,
                     "is required with shmguard.io/batch-bytes (DataLoader num_workers per process)",
                     std::string("annotation ") + kNumWorkersAnnotation);
  }
  in.workers = **workers;
  auto prefetch = ReadCountAnnotation(t.annotations, kPrefetchFactorAnnotation, 1, 1024);
  if (!prefetch) return prefetch.error();
  in.prefetch = prefetch->value_or(policy.sizing.prefetch_factor);
  auto it = t.annotations.find(kBatchBytesAnnotation);
  std::string where = std::string("annotation ") + kBatchBytesAnnotation;
  if (it == t.annotations.end() || !it->second) {
    if (in.workers == 0) return in;  // no workers: batches never touch /dev/shm
    return MakeError(Code::kInvalidInput,
                     "is required when num-workers > 0: the bytes of one collated batch, e.g. 48Mi",
                     where);
  }
  if (!it->second.IsString()) {
    return MakeError(Code::kInvalidInput,
                     "annotation values must be strings: quote it (\"" + it->second.Dump() + "\")",
                     where);
  }
  auto bytes = ParseBytes(it->second.String(), where);
  if (!bytes) return bytes.error();
  in.batch_bytes = *bytes;
  return in;
}

// max_fraction × limit < required, in exact integers.
bool ExceedsFraction(int64_t required, int64_t limit, int64_t ppm) {
  return static_cast<Int128>(required) * 1'000'000 > static_cast<Int128>(limit) * ppm;
}

// The plan as compact JSON with sorted keys — what json::dump would write, built directly:
// every value is a number or a quantity ([0-9A-Za-z.]), so nothing needs escaping.
std::string PlanAnnotation(const SizingInputs& in, const PodFacts& f, const ShmPlan& plan) {
  return R"({"batchBytes":")" + FormatBytes(in.batch_bytes) + R"(","gpus":)" + std::to_string(f.gpus) +
         R"(,"nodes":)" + std::to_string(f.nodes) + R"(,"prefetchFactor":)" +
         std::to_string(in.prefetch) + R"(,"procs":)" + std::to_string(f.procs) +
         R"(,"required":")" + FormatBytes(plan.required_bytes) + R"(","workers":)" +
         std::to_string(in.workers) + "}";
}

void EvaluateSized(const PodTemplate& t, const Workload& w, const NamespaceRule& rule,
                   const Policy& policy, Wording wording, PodEvaluation& pe, JsonPatch& patch) {
  auto sizing = ReadSizing(t, policy);
  if (!sizing) return DenyWith(pe, sizing.error());
  auto facts = ReadPodFacts(t, policy);
  if (!facts) return DenyWith(pe, facts.error());
  pe.memory_limit_bytes = facts->memory_limit_bytes;
  auto mount = FindShmMount(t);
  if (!mount) return DenyWith(pe, mount.error());
  pe.current_shm = mount->kind == ShmMountKind::kNone ? "64Mi (container default)"
                                                        : mount->description;

  ShmInputs in{sizing->workers, sizing->prefetch, sizing->batch_bytes, facts->procs, facts->nodes};
  auto plan = PlanShm(in, policy.sizing);
  if (!plan) return DenyWith(pe, plan.error());
  pe.plan = *plan;
  const int64_t required = plan->required_bytes;
  // The plan in words is a sized pod's first reason: written now when every reason is, else
  // only ahead of a denial's reason.
  const bool everything = wording == Wording::kEverything;
  auto explain_plan = [&] {
    pe.reasons.push_back(PlanSummary(*plan, policy.sizing) + " (" + std::to_string(facts->procs) +
                         (facts->procs == 1 ? " proc" : " procs") + " from " + facts->procs_source + ")");
  };
  auto deny = [&](std::string reason) {
    if (!everything) explain_plan();
    pe.verdict = Verdict::kDeny;
    pe.reasons.push_back(std::move(reason));
  };
  if (everything) explain_plan();

  if (mount->kind == ShmMountKind::kOther) {
    return deny("/dev/shm is mounted from " + mount->description +
                "; shmguard only sizes an emptyDir {medium: Memory}: replace it");
  }
  if (facts->memory_limit_bytes) {
    int64_t limit = *facts->memory_limit_bytes;
    std::string lim = FormatBytes(limit);
    if (required > limit) {
      return deny("memory limit " + lim + " (" + facts->memory_limit_source + ") is below the " +
                  FormatBytes(required) +
                  " dshm needs: raise the limit or lower num-workers/prefetch-factor/batch size");
    }
    if (ExceedsFraction(required, limit, policy.max_fraction_ppm)) {
      return deny("dshm " + FormatBytes(required) + " is more than " + FormatPpm(policy.max_fraction_ppm) +
                  " of the memory limit " + lim + ", leaving " + HumanBytes(limit - required) +
                  " for the processes: raise the limit or shrink the DataLoader queue");
    }
    if (everything) {
      pe.reasons.push_back("memory limit " + lim + " leaves " + HumanBytes(limit - required) +
                           " for the processes (dshm pages count against the limit)");
    }
    if (mount->size_limit && *mount->size_limit > limit) {
      pe.warnings.push_back("sizeLimit " + FormatBytes(*mount->size_limit) +
                            " exceeds the memory limit " + lim + "; the kubelet caps it at " + lim);
    }
  } else {
    pe.warnings.push_back("no memory limit (" + facts->memory_limit_source +
                          "): dshm pages are bounded only by sizeLimit and node memory");
  }

  const bool privileged = rule.pod_security == PodSecurityLevel::kPrivileged;
  bool want_host_ipc = policy.host_ipc == HostIpcMode::kAlways ||
                       (policy.host_ipc == HostIpcMode::kAuto && facts->gpus >= 2);
  PatchOptions options;
  options.required_bytes = required;
  options.host_ipc = want_host_ipc && privileged;
  options.ipc_lock = privileged ? policy.ipc_lock : ContainerSelection::kNever;
  options.init_container_mounts = policy.init_container_mounts;
  options.describe_changes = everything;
  if (!privileged) {
    std::string level = PodSecurityLevelName(rule.pod_security);
    if (want_host_ipc) pe.warnings.push_back("hostIPC not set: Pod Security " + level + " forbids it");
    bool any_lock = policy.ipc_lock == ContainerSelection::kAll ||
                    (policy.ipc_lock == ContainerSelection::kGpuContainers && facts->gpus > 0);
    if (any_lock) pe.warnings.push_back("IPC_LOCK not added: Pod Security " + level + " forbids it");
  }
  options.annotations[kPlanAnnotation] = PlanAnnotation(*sizing, *facts, *plan);
  if (!w.is_pod) {  // controller annotations do not reach the pods: copy the effective ones
    for (const char* key : {kNumWorkersAnnotation, kPrefetchFactorAnnotation,
                            kBatchBytesAnnotation, kProcsPerPodAnnotation, kNodesAnnotation}) {
      auto it = t.annotations.find(key);
      if (it != t.annotations.end() && it->second.IsString()) {
        options.annotations[key] = it->second.String();
      }
    }
    if (facts->nodes > 1) options.annotations[kNodesAnnotation] = std::to_string(facts->nodes);
  }
  auto pod_patch = BuildPodPatch(t, *facts, *mount, options);
  if (!pod_patch) return deny(pod_patch.error().ToString());
  pe.verdict = pod_patch->ops.empty() ? Verdict::kOk : Verdict::kPatch;
  patch.Extend(pod_patch->ops);
  pe.changes = std::move(pod_patch->changes);
}

void EvaluatePod(const PodTemplate& t, const Workload& w, const NamespaceRule& rule,
                 const Policy& policy, Wording wording, PodEvaluation& pe, JsonPatch& patch) {
  pe.label = t.label;
  pe.path = t.spec_pointer;
  pe.current_shm = "64Mi (container default)";
  auto mode = t.annotations.find(kModeAnnotation);
  if (mode != t.annotations.end()) {
    if (mode->second.Is("skip")) {
      pe.verdict = Verdict::kSkip;
      pe.reasons.push_back(std::string("opted out with ") + kModeAnnotation + ": skip");
      return;
    }
    pe.verdict = Verdict::kDeny;
    pe.reasons.push_back(std::string("annotation ") + kModeAnnotation + ": " + mode->second.Dump() +
                         " is not understood; the only value is \"skip\"");
    return;
  }
  if (Has(t.annotations, kNumWorkersAnnotation) || Has(t.annotations, kBatchBytesAnnotation)) {
    return EvaluateSized(t, w, rule, policy, wording, pe, patch);
  }
  pe.verdict = Verdict::kOk;
  if (!rule.require_annotations) {
    pe.reasons.push_back("no sizing annotations (shmguard.io/num-workers, shmguard.io/batch-bytes)");
    return;
  }
  auto facts = ReadPodFacts(t, policy);
  if (!facts) return DenyWith(pe, facts.error());
  if (facts->gpus == 0) {
    pe.reasons.push_back("no GPUs and no sizing annotations");
    return;
  }
  pe.verdict = Verdict::kDeny;
  pe.reasons.push_back("GPU pods in this namespace must declare shmguard.io/num-workers and "
                       "shmguard.io/batch-bytes (DataLoader num_workers and bytes per batch)");
}

std::string Prefixed(const std::string& label, const std::string& text, bool prefix) {
  return prefix ? label + ": " + text : text;
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kSkip: return "skip";
    case Verdict::kOk: return "ok";
    case Verdict::kPatch: return "patch";
    case Verdict::kDeny: return "deny";
  }
  return "skip";
}

std::vector<std::string> Evaluation::AllReasons() const {
  std::vector<std::string> out = reasons;
  for (const auto& p : pods) {
    for (const auto& r : p.reasons) out.push_back(Prefixed(p.label, r, pods.size() > 1));
  }
  return out;
}

std::vector<std::string> Evaluation::AllWarnings() const {
  std::vector<std::string> out;
  for (const auto& p : pods) {
    for (const auto& r : p.warnings) out.push_back(Prefixed(p.label, r, pods.size() > 1));
  }
  return out;
}

int64_t Evaluation::RequiredBytes() const {
  int64_t out = 0;
  for (const auto& p : pods) {
    if (p.plan) out = std::max(out, p.plan->required_bytes);
  }
  return out;
}

Evaluation Evaluate(JsonNode object, const Policy& policy, std::string_view namespace_name,
                    Wording wording) {
  Evaluation ev;
  auto workload = FindPodTemplates(object);
  if (!workload) {
    const Error& e = workload.error();
    ev.verdict = e.code == Code::kUnsupportedKind ? Verdict::kSkip : Verdict::kDeny;
    ev.reasons.push_back(e.ToString());
    ev.kind = object.StringMember("kind");
    return ev;
  }
  const Workload& w = *workload;
  ev.workload = true;
  ev.api_version = w.api_version;
  ev.kind = w.kind;
  ev.name = w.name;
  ev.namespace_name = !namespace_name.empty() ? std::string(namespace_name)
                      : !w.namespace_name.empty() ? w.namespace_name
                                                  : "default";
  ev.rule = MatchNamespace(policy, ev.namespace_name);
  if (ev.rule.mode == NamespaceMode::kOff) {
    ev.verdict = Verdict::kSkip;
    ev.reasons.push_back("namespace " + ev.namespace_name + " is off in the policy");
    return ev;
  }
  for (const auto& t : w.templates) {
    PodEvaluation pe;
    EvaluatePod(t, w, ev.rule, policy, wording, pe, ev.patch);
    ev.verdict = ev.pods.empty() ? pe.verdict : std::max(ev.verdict, pe.verdict);
    ev.pods.push_back(std::move(pe));
  }
  if (ev.pods.empty()) {
    ev.verdict = Verdict::kOk;
    ev.reasons.push_back("no pod templates");
  }
  return ev;
}

}  // namespace shmguard
