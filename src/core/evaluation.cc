// Evaluate: discovery -> facts -> plan -> memory check -> patch, for every pod template.
#include "shmguard/evaluation.h"

#include <algorithm>
#include <optional>

#include "shmguard/compact_json.h"
#include "shmguard/compose.h"
#include "shmguard/int128.h"
#include "shmguard/pod_facts.h"
#include "shmguard/pod_templates.h"
#include "shmguard/quantity.h"
#include "shmguard/shm_estimate.h"
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
  auto workers = ReadCountAnnotation(t.annotations, kNumWorkersAnnotation, 0, kMaxWorkers);
  if (!workers) return workers.error();
  if (!*workers) {
    return MakeError(Code::kInvalidInput,
                     "is required with shmguard.io/batch-bytes (DataLoader num_workers per process)",
                     std::string("annotation ") + kNumWorkersAnnotation);
  }
  in.workers = **workers;
  auto prefetch = ReadCountAnnotation(t.annotations, kPrefetchFactorAnnotation, 1, kMaxPrefetchFactor);
  if (!prefetch) return prefetch.error();
  in.prefetch = prefetch->value_or(policy.sizing.prefetch_factor);
  auto it = t.annotations.find(kBatchBytesAnnotation);
  std::string where = std::string("annotation ") + kBatchBytesAnnotation;
  if (it == t.annotations.end() || !it->second) {
    if (in.workers == 0) return in;  // no workers: batches never touch /dev/shm
    return MakeError(Code::kInvalidInput,
                     "is required when num-workers > 0: the bytes of one collated batch, e.g. 48Mi", where);
  }
  if (!it->second.IsString()) {
    return MakeError(Code::kInvalidInput, "annotation values must be strings: quote it (\"" + it->second.Dump() + "\")",
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
  return R"({"batchBytes":")" + FormatBytes(in.batch_bytes) + R"(","gpus":)" + std::to_string(f.gpus) + R"(,"nodes":)" +
         std::to_string(f.nodes) + R"(,"prefetchFactor":)" + std::to_string(in.prefetch) + R"(,"procs":)" +
         std::to_string(f.procs) + R"(,"required":")" + FormatBytes(plan.required_bytes) + R"(","workers":)" +
         std::to_string(in.workers) + "}";
}

// The plan annotation of an estimated size: what it was estimated from, sorted keys.
std::string EstimateAnnotation(const ShmEstimate& e, const PodFacts& f, int64_t required) {
  return R"({"estimated":)" + JsonQuoted(e.basis) + R"(,"floor":")" + FormatBytes(e.floor_bytes) + R"(","gpus":)" +
         std::to_string(f.gpus) + R"(,"nodes":)" + std::to_string(f.nodes) + R"(,"procs":)" + std::to_string(f.procs) +
         R"(,"required":")" + FormatBytes(required) + "\"}";
}

// What /dev/shm is today, for people. With hostIPC and nothing mounted there, the container
// runtime gives the pod the node's /dev/shm (containerd's CRI: only when no mount targets it).
std::string CurrentShm(const ShmMount& mount, const PodTemplate& t, const PodFacts& facts) {
  if (mount.kind != ShmMountKind::kNone) return mount.description;
  if (!t.shm_unknown.empty()) return "unknown (" + t.shm_unknown + ")";
  if (t.compose_service) return facts.host_ipc ? "the host's /dev/shm (ipc: host)" : "64Mi (Docker's default)";
  return facts.host_ipc ? "the node's /dev/shm (hostIPC: true)" : "64Mi (container default)";
}

// What /dev/shm is named in reasons: the volume shmguard adds, or a Compose service's.
const char* ShmName(const PodTemplate& t) { return t.compose_service ? "/dev/shm" : "dshm"; }

// The /dev/shm KubeRay mounts on a Ray pod that has none (ray-operator/controllers/ray/common/
// pod.go): an emptyDir {medium: Memory} on the Ray container, sized to its memory limit, else its
// request, else unbounded.
ShmMount WithOperatorShm(const PodTemplate& t, const PodFacts& facts, ShmMount mount) {
  if (!t.operator_shm || mount.kind != ShmMountKind::kNone || facts.containers.empty() || facts.containers[0].init) {
    return mount;
  }
  const ContainerFacts& ray = facts.containers[0];
  mount.kind = ShmMountKind::kMemoryEmptyDir;
  mount.volume_name = "shared-mem";
  mount.implicit = true;
  mount.description =
      "emptyDir Memory without sizeLimit (KubeRay's shared-mem: the Ray container has no memory limit or request)";
  if (auto bytes = ray.memory_limit ? ray.memory_limit : ray.memory_request) {
    mount.size_limit = *bytes;
    mount.description = "emptyDir Memory " + FormatBytes(*bytes) +
                        " (KubeRay's shared-mem: the Ray container's memory " +
                        (ray.memory_limit ? "limit)" : "request)");
  }
  return mount;
}

// What `t` has at /dev/shm: a Compose service's shm_size or ipc, else the mounts of its pod
// spec and what its operator adds.
Result<ShmMount> ReadShm(const PodTemplate& t, const PodFacts& facts) {
  if (t.compose_service) return FindServiceShm(t);
  return WithOperatorShm(t, facts, facts.shm);
}

// A kind shmguard evaluates but never patches (KubeRay's, a TrainJob): what it has is enough, or
// its pods are patched when created (nullopt), or the reason to deny.
std::optional<std::string> UnpatchedDenial(const PodTemplate& t, const Workload& w, const ShmMount& mount,
                                           const std::string& current, int64_t required) {
  if (mount.kind == ShmMountKind::kMemoryEmptyDir && (!mount.size_limit || *mount.size_limit >= required)) {
    return std::nullopt;
  }
  if (t.pods_patched_at_creation && mount.kind != ShmMountKind::kOther) return std::nullopt;
  std::string fix = t.operator_shm ? "raise the Ray container's memory limit (KubeRay sizes /dev/shm to it) or mount "
                                     "an emptyDir {medium: Memory} of that size at /dev/shm"
                                   : "mount an emptyDir {medium: Memory} of that size at /dev/shm";
  return "/dev/shm is " + current + ", below the " + FormatBytes(required) + " needed; shmguard does not patch a " +
         w.kind + ": " + fix;
}

// The reason an unpatched kind is fine (UnpatchedDenial gave nullopt).
std::string UnpatchedCovered(const PodTemplate& t, const Workload& w, const ShmMount& mount, const std::string& current,
                             int64_t required) {
  const bool covered =
      mount.kind == ShmMountKind::kMemoryEmptyDir && (!mount.size_limit || *mount.size_limit >= required);
  if (!covered && !t.shm_unknown.empty()) {
    return "needs /dev/shm of " + FormatBytes(required) + "; what its pods have is unknown (" + t.shm_unknown +
           "); shmguard patches them when they are created if they have less";
  }
  if (!covered) {
    return "/dev/shm is " + current + ", below the " + FormatBytes(required) + " needed: shmguard does not patch a " +
           w.kind + "; its pods are patched when they are created";
  }
  return "/dev/shm " + current + " covers the " + FormatBytes(required) + " needed (shmguard does not patch a " +
         w.kind + ")";
}

// Reasons for the NCCL settings the pod states.
void NoteNccl(const PodFacts& f, PodEvaluation& pe) {
  if (f.nccl_shm_disabled && f.procs >= 2) {
    pe.reasons.push_back("NCCL_SHM_DISABLE=1 (" + f.nccl_shm_disabled_source +
                         "): NCCL's shared-memory transport is off, so no NCCL shm term");
  }
  if (f.nccl_p2p_disabled) {
    pe.reasons.push_back("NCCL_P2P_DISABLE=1 (" + f.nccl_p2p_disabled_source +
                         "): NCCL moves intra-node traffic through /dev/shm instead of GPU peer-to-peer");
  }
}

// The memory-limit checks a size must pass: a reason to deny, or "" when it fits.
std::string CheckMemoryLimit(int64_t required, const std::string& what, const PodFacts& f, const Policy& policy,
                             const std::string& remedy) {
  if (!f.memory_limit_bytes) return {};
  const int64_t limit = *f.memory_limit_bytes;
  const std::string lim = FormatBytes(limit);
  if (required > limit) {
    return "memory limit " + lim + " (" + f.memory_limit_source + ") is below the " + FormatBytes(required) + " " +
           what + ": " + remedy;
  }
  if (ExceedsFraction(required, limit, policy.max_fraction_ppm)) {
    return what + " " + FormatBytes(required) + " is more than " + FormatPpm(policy.max_fraction_ppm) +
           " of the memory limit " + lim + ", leaving " + HumanBytes(limit - required) +
           " for the processes: " + remedy;
  }
  return {};
}

// The patch that gives `t` a /dev/shm of `required` bytes with the plan annotation `plan_json`,
// and the Pod Security and memory warnings that go with it: sets the pod's verdict.
void PatchTo(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
             const PodFacts& facts, const ShmMount& mount, int64_t required, std::string plan_json, bool everything,
             PodEvaluation& pe) {
  if (facts.memory_limit_bytes && mount.size_limit && *mount.size_limit > *facts.memory_limit_bytes) {
    const std::string lim = FormatBytes(*facts.memory_limit_bytes);
    pe.warnings.push_back(t.compose_service
                              ? "shm_size " + FormatBytes(*mount.size_limit) + " exceeds the memory limit " + lim +
                                    ": filling /dev/shm past it gets the container OOM-killed"
                              : "sizeLimit " + FormatBytes(*mount.size_limit) + " exceeds the memory limit " + lim +
                                    "; the kubelet caps it at " + lim);
  }
  if (t.compose_service) {  // no Pod Security, no hostIPC, no annotations: shm_size and ulimits
    PatchOptions options;
    options.required_bytes = required;
    options.ipc_lock = policy.ipc_lock;
    options.describe_changes = everything;
    if (facts.host_ipc && everything) {
      pe.reasons.push_back(
          "ipc: host: the service uses the host's /dev/shm, which Docker does not size (it ignores "
          "shm_size then); the host needs " +
          FormatBytes(required) + " free there");
    }
    auto service_patch = BuildServicePatch(t, facts, mount, options);
    if (!service_patch) return DenyWith(pe, service_patch.error());
    pe.verdict = service_patch->ops.empty() ? Verdict::kOk : Verdict::kPatch;
    pe.patch = std::move(service_patch->ops);
    pe.changes = std::move(service_patch->changes);
    return;
  }
  const bool privileged = rule.pod_security == PodSecurityLevel::kPrivileged;
  bool want_host_ipc =
      policy.host_ipc == HostIpcMode::kAlways || (policy.host_ipc == HostIpcMode::kAuto && facts.gpus >= 2);
  PatchOptions options;
  options.required_bytes = required;
  options.host_ipc = want_host_ipc && privileged && t.has_host_ipc;
  if (want_host_ipc && privileged && !t.has_host_ipc) {
    pe.warnings.push_back("hostIPC not set: a " + w.kind + " has no hostIPC field for its pods");
  }
  options.ipc_lock = privileged ? policy.ipc_lock : ContainerSelection::kNever;
  options.init_container_mounts = policy.init_container_mounts;
  options.describe_changes = everything;
  if (!privileged) {
    std::string level = PodSecurityLevelName(rule.pod_security);
    if (want_host_ipc) pe.warnings.push_back("hostIPC not set: Pod Security " + level + " forbids it");
    bool any_lock = policy.ipc_lock == ContainerSelection::kAll ||
                    (policy.ipc_lock == ContainerSelection::kGpuContainers && facts.gpus > 0);
    if (any_lock) pe.warnings.push_back("IPC_LOCK not added: Pod Security " + level + " forbids it");
  }
  options.annotations[kPlanAnnotation] = std::move(plan_json);
  if (!w.is_pod) {  // controller annotations do not reach the pods: copy the effective ones
    for (const char* key : {kNumWorkersAnnotation, kPrefetchFactorAnnotation, kBatchBytesAnnotation,
                            kProcsPerPodAnnotation, kNodesAnnotation}) {
      auto it = t.annotations.find(key);
      if (it != t.annotations.end() && it->second.IsString()) {
        options.annotations[key] = it->second.String();
      }
    }
    if (facts.nodes > 1) options.annotations[kNodesAnnotation] = std::to_string(facts.nodes);
  }
  auto pod_patch = BuildPodPatch(t, facts, mount, options);
  if (!pod_patch) {
    pe.verdict = Verdict::kDeny;
    pe.reasons.push_back(pod_patch.error().ToString());
    return;
  }
  pe.verdict = pod_patch->ops.empty() ? Verdict::kOk : Verdict::kPatch;
  pe.patch = std::move(pod_patch->ops);
  pe.changes = std::move(pod_patch->changes);
}

void EvaluateSized(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
                   Wording wording, PodEvaluation& pe) {
  auto sizing = ReadSizing(t, policy);
  if (!sizing) return DenyWith(pe, sizing.error());
  auto facts = ReadPodFacts(t, policy);
  if (!facts) return DenyWith(pe, facts.error());
  pe.memory_limit_bytes = facts->memory_limit_bytes;
  auto mount = ReadShm(t, *facts);
  if (!mount) return DenyWith(pe, mount.error());
  pe.current_shm = CurrentShm(*mount, t, *facts);

  ShmInputs in = PodShmInputs(*facts);
  in.workers = sizing->workers;
  in.prefetch_factor = sizing->prefetch;
  in.batch_bytes = sizing->batch_bytes;
  auto plan = PlanShm(in, policy.sizing);
  if (!plan) return DenyWith(pe, plan.error());
  pe.plan = *plan;
  pe.required_bytes = plan->required_bytes;
  const int64_t required = plan->required_bytes;
  // The plan in words is a sized pod's first reason: written now when every reason is, else
  // only ahead of a denial's reason.
  const bool everything = wording == Wording::kEverything;
  auto explain_plan = [&] {
    pe.reasons.push_back(PlanSummary(*plan, policy.sizing, ShmName(t)) + " (" + std::to_string(facts->procs) +
                         (facts->procs == 1 ? " proc" : " procs") + " from " + facts->procs_source + ")");
  };
  auto deny = [&](std::string reason) {
    if (!everything) explain_plan();
    pe.verdict = Verdict::kDeny;
    pe.reasons.push_back(std::move(reason));
  };
  if (everything) {
    explain_plan();
    NoteNccl(*facts, pe);
  }

  if (mount->kind == ShmMountKind::kOther) {
    return deny("/dev/shm is mounted from " + mount->description +
                "; shmguard only sizes an emptyDir {medium: Memory}: replace it");
  }
  LimitCheck limit = CheckLimit(required, *facts, policy, ShmName(t), static_cast<bool>(t.compose_service));
  if (!limit.denial.empty()) return deny(std::move(limit.denial));
  if (!limit.warning.empty()) pe.warnings.push_back(std::move(limit.warning));
  if (!limit.left.empty() && everything) pe.reasons.push_back(std::move(limit.left));
  if (!t.patchable) {
    if (auto denial = UnpatchedDenial(t, w, *mount, pe.current_shm, required)) return deny(std::move(*denial));
    pe.verdict = Verdict::kOk;
    if (everything) pe.reasons.push_back(UnpatchedCovered(t, w, *mount, pe.current_shm, required));
    return;
  }
  PatchTo(t, w, rule, policy, *facts, *mount, required, PlanAnnotation(*sizing, *facts, *plan), everything, pe);
}

// True when every container requesting GPUs mounts /dev/shm (so none is left at 64Mi).
bool GpuContainersMountShm(const PodFacts& facts, const ShmMount& mount) {
  for (size_t i = 0; i < facts.containers.size(); ++i) {
    const ContainerFacts& c = facts.containers[i];
    bool operator_mounted = mount.implicit && i == 0;
    if (c.gpus > 0 && !operator_mounted && !c.mounts_shm) return false;
  }
  return true;
}

// A GPU pod without DataLoader annotations (policy `unannotated`): what it has wins when it is
// at least the floor; otherwise it gets the estimate (or, for a memory emptyDir it sized
// itself, the floor).
// REQUIRES: `mount` is what `t` has at /dev/shm (ReadPodFacts, WithOperatorShm).
void EvaluateEstimated(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
                       Wording wording, const PodFacts& facts, const ShmMount& mount, PodEvaluation& pe) {
  const bool everything = wording == Wording::kEverything;
  auto estimate = EstimateShm(facts, policy);
  if (!estimate) return DenyWith(pe, estimate.error());
  pe.plan = estimate->floor_plan;
  pe.estimated = true;
  pe.required_bytes = estimate->floor_bytes;
  const std::string floor = DescribeFloor(*estimate, policy);
  if (everything) NoteNccl(facts, pe);
  std::string over =
      CheckMemoryLimit(estimate->floor_bytes, "floor of a GPU pod", facts, policy, "raise the memory limit");
  if (!over.empty()) {
    pe.verdict = Verdict::kDeny;
    pe.reasons.push_back("no DataLoader annotations; /dev/shm needs at least " + floor);
    pe.reasons.push_back(std::move(over));
    return;
  }

  const char* exact = "; set shmguard.io/num-workers and shmguard.io/batch-bytes for an exact size";
  pe.verdict = Verdict::kOk;
  if (mount.kind == ShmMountKind::kOther) {
    pe.reasons.push_back("/dev/shm is mounted from " + mount.description +
                         "; without DataLoader annotations shmguard leaves it as it is");
    return;
  }
  if (mount.kind == ShmMountKind::kNone && facts.host_ipc) {
    pe.reasons.push_back("uses " + pe.current_shm + ", at least " + floor);
    return;
  }
  const bool own_is_enough =
      mount.kind == ShmMountKind::kMemoryEmptyDir && (!mount.size_limit || *mount.size_limit >= estimate->floor_bytes);
  if (own_is_enough && GpuContainersMountShm(facts, mount)) {
    pe.reasons.push_back("/dev/shm " + pe.current_shm + " covers " + floor);
    return;
  }

  // What it has is below the floor: a memory emptyDir of its own is raised only to the floor.
  const int64_t size = mount.kind == ShmMountKind::kMemoryEmptyDir
                           ? std::max(estimate->floor_bytes, mount.size_limit.value_or(0))
                           : estimate->estimate_bytes;
  pe.required_bytes = size;
  if (!t.patchable) {
    if (auto denial = UnpatchedDenial(t, w, mount, pe.current_shm, estimate->floor_bytes)) {
      pe.verdict = Verdict::kDeny;
      pe.reasons.push_back(std::move(*denial));
    } else if (everything) {
      pe.reasons.push_back(UnpatchedCovered(t, w, mount, pe.current_shm, size));
    }
    return;
  }
  if (mount.kind == ShmMountKind::kMemoryEmptyDir && !own_is_enough) {
    pe.warnings.push_back("sized without DataLoader annotations: /dev/shm raised from " +
                          FormatBytes(*mount.size_limit) + " to " + floor + exact);
  } else {
    pe.warnings.push_back("sized without DataLoader annotations: " + FormatBytes(size) + " = " + estimate->basis +
                          exact);
  }
  if (everything) {
    pe.reasons.push_back("/dev/shm is " + pe.current_shm + ", below " + floor);
  }
  PatchTo(t, w, rule, policy, facts, mount, size, EstimateAnnotation(*estimate, facts, size), everything, pe);
}

void EvaluatePod(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
                 Wording wording, PodEvaluation& pe) {
  pe.label = t.label;
  pe.path = t.spec_pointer;
  pe.current_shm = t.compose_service ? "64Mi (Docker's default)" : "64Mi (container default)";
  if (t.error) return DenyWith(pe, *t.error);
  if (wording == Wording::kEverything) pe.reasons = t.notes;
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
    return EvaluateSized(t, w, rule, policy, wording, pe);
  }
  pe.verdict = Verdict::kOk;
  auto facts = ReadPodFacts(t, policy);
  if (!facts) return DenyWith(pe, facts.error());
  pe.memory_limit_bytes = facts->memory_limit_bytes;
  // What it has at /dev/shm, for every pod; a malformed mount only matters to a GPU pod.
  Result<ShmMount> mount = ReadShm(t, *facts);
  if (mount) pe.current_shm = CurrentShm(*mount, t, *facts);
  if (!facts->requests_gpus) {
    pe.reasons.push_back("no GPUs and no sizing annotations");
    return;
  }
  if (rule.require_annotations) {
    pe.verdict = Verdict::kDeny;
    pe.reasons.push_back(
        "GPU pods in this namespace must declare shmguard.io/num-workers and "
        "shmguard.io/batch-bytes (DataLoader num_workers and bytes per batch)");
    return;
  }
  if (policy.unannotated.mode == UnannotatedMode::kLeave) {
    pe.reasons.push_back(
        "no sizing annotations (shmguard.io/num-workers, shmguard.io/batch-bytes); "
        "the policy leaves such GPU pods as they are");
    return;
  }
  if (!mount) return DenyWith(pe, mount.error());
  EvaluateEstimated(t, w, rule, policy, wording, *facts, *mount, pe);
}

std::string Prefixed(const std::string& label, const std::string& text, bool prefix) {
  return prefix ? label + ": " + text : text;
}

}  // namespace

LimitCheck CheckLimit(int64_t required, const PodFacts& facts, const Policy& policy, std::string_view what,
                      bool compose) {
  LimitCheck c;
  const std::string name(what);
  c.denial = CheckMemoryLimit(required, name + " needs", facts, policy,
                              "raise the limit or lower num-workers/prefetch-factor/batch size");
  if (!c.denial.empty()) return c;
  if (!facts.memory_limit_bytes) {
    c.warning = "no memory limit (" + facts.memory_limit_source + "): " + name +
                (compose ? " pages are bounded only by shm_size and host memory"
                         : " pages are bounded only by sizeLimit and node memory");
  } else {
    c.left = "memory limit " + FormatBytes(*facts.memory_limit_bytes) + " leaves " +
             HumanBytes(*facts.memory_limit_bytes - required) + " for the processes (" + name +
             " pages count against the limit)";
  }
  return c;
}

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
  std::vector<std::string> out = warnings;
  for (const auto& p : pods) {
    for (const auto& r : p.warnings) out.push_back(Prefixed(p.label, r, pods.size() > 1));
  }
  return out;
}

int64_t Evaluation::RequiredBytes() const {
  int64_t out = 0;
  for (const auto& p : pods) {
    out = std::max(out, p.required_bytes);
  }
  return out;
}

Evaluation Evaluate(JsonNode object, const Policy& policy, std::string_view namespace_name, Wording wording,
                    const RuntimeCatalog* runtimes, PodSecurityLevel namespace_pod_security) {
  Evaluation ev;
  auto workload = FindPodTemplates(object, runtimes);
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
  ev.namespace_name = !namespace_name.empty()     ? std::string(namespace_name)
                      : !w.namespace_name.empty() ? w.namespace_name
                                                  : "default";
  ev.separate_pods = w.separate_pods;
  // A Compose file (the only kind of separate applications) runs in no namespace: the default
  // rule (privileged, no annotations required). A cluster-scoped object has none either: the
  // rule that matches every namespace ("*"), if any, applies to it.
  if (w.separate_pods || w.cluster_scoped) ev.namespace_name.clear();
  ev.rule = w.separate_pods ? NamespaceRule{} : MatchNamespace(policy, ev.namespace_name);
  ev.rule.pod_security = std::max(ev.rule.pod_security, namespace_pod_security);
  if (ev.rule.mode == NamespaceMode::kOff) {
    ev.verdict = Verdict::kSkip;
    ev.reasons.push_back(w.cluster_scoped ? "cluster-scoped objects are off in the policy (its \"*\" rule)"
                                          : "namespace " + ev.namespace_name + " is off in the policy");
    return ev;
  }
  ev.reasons = w.notes;
  ev.warnings = w.warnings;
  for (const auto& t : w.templates) {
    PodEvaluation pe;
    EvaluatePod(t, w, ev.rule, policy, wording, pe);
    ev.patch.Extend(pe.patch);
    if (!w.separate_pods) pe.patch = JsonPatch();  // only separate applications are patched one by one
    ev.verdict = ev.pods.empty() ? pe.verdict : std::max(ev.verdict, pe.verdict);
    ev.pods.push_back(std::move(pe));
  }
  if (ev.pods.empty()) {
    ev.verdict = Verdict::kOk;
    ev.reasons.push_back("no pod templates");
  }
  // A workload one of whose pods is denied is not patched at all: /mutate sends no patch then,
  // and the audit shows what /mutate would do. Separate applications are patched one by one.
  if (ev.verdict == Verdict::kDeny && !ev.separate_pods) ev.patch = JsonPatch();
  return ev;
}

}  // namespace shmguard
