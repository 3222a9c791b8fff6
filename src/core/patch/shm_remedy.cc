// RemedyFor: PatchTo for a kind shmguard patches, JudgeUnpatched for the others.
#include "core/patch/shm_remedy.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "core/patch/compose_patch.h"
#include "core/patch/ipc_lock.h"
#include "core/patch/plan_annotation.h"
#include "core/patch/shm_patch.h"
#include "core/values/json_patch.h"

namespace shmguard {
namespace {

// A memory emptyDir with no sizeLimit is bounded only by the memory limit: it covers any size.
bool Covers(const ShmMount& mount, int64_t required) {
  return mount.kind == ShmMountKind::kMemoryEmptyDir && (!mount.size_limit || *mount.size_limit >= required);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The patch's options for a pod under `rule`; the Pod Security findings they imply go after
// `out`'s.
PatchOptions PodPatchOptions(const PodStage& s, const PodFacts& facts, std::vector<Finding>& out) {
  const PodTemplate& t = s.t;
  const Workload& w = s.w;
  const NamespaceRule& rule = s.rule;
  const Policy& policy = s.policy;
  const PodContext& ctx = s.ctx;
  const bool privileged = rule.pod_security == PodSecurityLevel::kPrivileged;
  const IpcLockMode lock = IpcLockIn(policy, rule);
  // hostIPC only where the policy asks for it: nothing shmguard sizes needs it (docs/sources.md §6).
  const bool want_host_ipc = HostIpcIn(policy, rule) == HostIpcMode::kAlways;
  PatchOptions options;
  options.host_ipc = want_host_ipc && privileged && t.has_host_ipc;
  if (want_host_ipc && privileged && !t.has_host_ipc && ctx.detail == Detail::kAll) {
    out.push_back(Finding(Check::kHostIpcUnavailable, t.spec_pointer).Val("kind", w.kind));
  }
  options.ipc_lock = privileged ? lock : IpcLockMode::kNever;
  options.init_container_mounts = policy.init_container_mounts;
  if (!privileged) {
    std::string level = PodSecurityLevelName(rule.pod_security);
    if (want_host_ipc && !facts.host_ipc) {
      out.push_back(Finding(Check::kPodSecurityLimitsPatch, t.spec_pointer + "/hostIPC")
                        .Val("level", level)
                        .Val("field", "hostIPC"));
    }
    const bool any_lock = std::any_of(facts.containers.begin(), facts.containers.end(), [&](const ContainerFacts& c) {
      return !c.init && c.ipc_lock != IpcLock::kGranted && AddsIpcLock(c, lock);
    });
    if (any_lock) {
      out.push_back(
          Finding(Check::kPodSecurityLimitsPatch, t.spec_pointer).Val("level", level).Val("field", "IPC_LOCK"));
    }
  }
  if (!w.is_pod) {  // controller annotations do not reach the pods: copy the effective ones
    for (const char* key : {kNumWorkersAnnotation, kPrefetchFactorAnnotation, kBatchBytesAnnotation,
                            kProcsPerPodAnnotation, kNodesAnnotation}) {
      auto it = t.annotations.find(key);
      if (it != t.annotations.end() && it->second.IsString()) options.annotations[key] = it->second.String();
    }
    if (facts.nodes > 1) options.annotations[kNodesAnnotation] = std::to_string(facts.nodes);
  }
  options.describe_changes = ctx.detail == Detail::kAll;
  return options;
}

// ipc-lock-non-root: the GPU containers that register host memory for RDMA as non-root, where
// IPC_LOCK would not take effect (ipc_lock.h). Nothing when there are none.
std::optional<Finding> NonRootMemlockFinding(const PodFacts& facts) {
  std::vector<std::string> names;
  const ContainerFacts* first = nullptr;
  for (const ContainerFacts& c : facts.containers) {
    if (!NeedsMemlockAsNonRoot(c)) continue;
    if (!first) first = &c;
    names.push_back(c.name);
  }
  if (!first) return std::nullopt;
  return std::move(Finding(Check::kIpcLockNonRoot, first->pointer + "/securityContext")
                       .Val("containers", Join(names))
                       .Val("reason", first->rdma)
                       .Val("user", first->run_as_source));
}

// The findings of what a patch gives, after `out`'s: /dev/shm (the volume, its size, the
// mounts), IPC_LOCK, hostIPC.
void PatchPartFindings(const PodStage& s, const PodFacts& facts, const ShmMount& mount, const PatchTarget& target,
                       const PodPatch& p, std::vector<Finding>& out) {
  const PodTemplate& t = s.t;
  if (!p.shm_pointer.empty()) {
    const bool compose_default = t.compose_service && !mount.size_limit && !facts.host_ipc;
    Finding f(compose_default ? Check::kComposeShmDefault : Check::kShmBelowNeed, p.shm_pointer);
    f.Num("required_bytes", target.required_bytes).Val("current", std::string(target.current));
    if (mount.size_limit) f.Num("current_bytes", *mount.size_limit);
    if (!p.volume && !p.mounted.empty()) f.Val("containers", Join(p.mounted));
    if (target.floor_numbers) {
      for (const auto& [name, value] : *target.floor_numbers) f.Num(name, value);
    }
    out.push_back(std::move(f));
  }
  if (!p.locked.empty()) {
    out.push_back(Finding(Check::kIpcLockMissing, p.lock_pointer)
                      .Val("containers", Join(p.locked))
                      .Val("reason", p.lock_reason)
                      .Val("user", p.lock_user));
  }
  if (p.host_ipc) out.push_back(Finding(Check::kHostIpcMissing, t.spec_pointer + "/hostIPC").Num("gpus", facts.gpus));
}

// A remedy that denies: the findings so far and the patch's error.
Remedy Denied(std::vector<Finding> findings, const Error& e) {
  return {Verdict::kDeny, std::move(findings), {}, {}, e};
}

Remedy PatchTo(const PodStage& s, const PodFacts& facts, const ShmMount& mount, PatchTarget target) {
  const PodTemplate& t = s.t;
  const PodContext& ctx = s.ctx;
  const int64_t required = target.required_bytes;
  const bool all = ctx.detail == Detail::kAll;
  std::vector<Finding> findings;
  findings.reserve(4);  // most patches come with one to four
  if (facts.memory_limit_bytes && mount.size_limit && *mount.size_limit > *facts.memory_limit_bytes) {
    std::string at = t.compose_service ? t.spec_pointer + "/shm_size" : mount.volume_pointer + "/emptyDir/sizeLimit";
    findings.push_back(Finding(Check::kSizeLimitOverMemoryLimit, at)
                           .Num("size_bytes", *mount.size_limit)
                           .Num("memory_limit_bytes", *facts.memory_limit_bytes)
                           .Num("compose", t.compose_service ? 1 : 0));
  }
  PatchOptions options;
  if (t.compose_service) {  // no Pod Security, no hostIPC, no annotations: shm_size and ulimits
    if (facts.host_ipc && all) {
      findings.push_back(Finding(Check::kComposeIpcHost, t.spec_pointer + "/ipc").Num("required_bytes", required));
    }
    options.ipc_lock = IpcLockIn(s.policy, s.rule);
    options.describe_changes = all;
  } else {
    options = PodPatchOptions(s, facts, findings);
    options.annotations[kPlanAnnotation] = PlanAnnotation(*target.note);
    if (auto non_root = NonRootMemlockFinding(facts)) findings.push_back(std::move(*non_root));
  }
  // An MPS client's /dev/shm is the MPS daemon's, mounted by the device plugin: no dshm over it.
  const bool mps = !facts.mps_resource.empty() && !t.compose_service;
  if (mps) {
    options.shm = false;
    findings.push_back(Finding(Check::kMpsShm, facts.mps_pointer)
                           .Num("required_bytes", required)
                           .Val("resource", facts.mps_resource)
                           .Val("containers", facts.mps_container));
  }
  options.required_bytes = required;
  auto build = [&](const PatchOptions& o) {
    return t.compose_service ? BuildServicePatch(t, facts, mount, o) : BuildPodPatch(t, facts, mount, o);
  };
  Result<PodPatch> patch = build(options);
  if (!patch) return Denied(std::move(findings), patch.error());
  PatchPartFindings(s, facts, mount, target, *patch, findings);
  // Exempted parts are reported (suppressed) but not written.
  const bool shm_exempt =
      ctx.Exempt(Check::kShmBelowNeed) || (t.compose_service && ctx.Exempt(Check::kComposeShmDefault));
  if (shm_exempt || ctx.Exempt(Check::kIpcLockMissing) || ctx.Exempt(Check::kHostIpcMissing)) {
    options.shm = !shm_exempt && !mps;
    if (ctx.Exempt(Check::kIpcLockMissing)) options.ipc_lock = IpcLockMode::kNever;
    if (ctx.Exempt(Check::kHostIpcMissing)) options.host_ipc = false;
    patch = build(options);
    if (!patch) return Denied(std::move(findings), patch.error());
    // Annotations alone (the plan) are no reason to patch a pod whose every part is exempted.
    if (patch->shm_pointer.empty() && patch->locked.empty() && !patch->host_ipc) *patch = PodPatch{};
  }
  // An MPS client with no other part to patch keeps its spec as it is: no plan annotation alone.
  if (mps && patch->locked.empty() && !patch->host_ipc) *patch = PodPatch{};
  // So does a pod whose /dev/shm already covers the plan and that needs nothing else (as an
  // unannotated pod's does): shmguard never makes an effective /dev/shm smaller, and annotations
  // alone change nothing in it.
  if (!t.compose_service && Covers(mount, required) && patch->AnnotationsOnly()) *patch = PodPatch{};
  if (all && !t.compose_service && !mps && Covers(mount, required)) {
    Finding f(Check::kShmSufficient, mount.volume_pointer);
    f.Num("required_bytes", required).Val("current", std::string(target.current));
    if (!mount.size_limit) {
      f.Num("unbounded", 1);
      if (facts.memory_limit_bytes) f.Num("memory_limit_bytes", *facts.memory_limit_bytes);
    }
    findings.push_back(std::move(f));
  }
  const Verdict verdict = patch->ops.empty() ? Verdict::kOk : Verdict::kPatch;
  return {verdict, std::move(findings), std::move(patch->ops), std::move(patch->changes), std::nullopt};
}

Remedy JudgeUnpatched(const PodStage& s, const ShmMount& mount, std::string_view current, int64_t required,
                      int64_t floor) {
  const PodTemplate& t = s.t;
  const Workload& w = s.w;
  const PodContext& ctx = s.ctx;
  const bool all = ctx.detail == Detail::kAll;
  const std::string volume = mount.volume_pointer.empty() ? t.spec_pointer + "/volumes" : mount.volume_pointer;
  const int64_t needed = floor > 0 ? floor : required;
  Remedy out;
  if (!Covers(mount, needed) && !(t.pods_patched_at_creation && mount.kind != ShmMountKind::kOther)) {
    out.verdict = Verdict::kDeny;
    out.findings.push_back(Finding(Check::kShmBelowNeed, volume)
                               .At(Severity::kError)
                               .Num("required_bytes", needed)
                               .Num("unpatched", 1)
                               .Num("operator_shm", t.operator_shm ? 1 : 0)
                               .Val("current", std::string(current))
                               .Val("kind", w.kind));
    return out;
  }
  if (!all) return out;
  if (Covers(mount, required)) {
    out.findings.push_back(Finding(Check::kShmSufficient, volume)
                               .Num("required_bytes", required)
                               .Val("current", std::string(current))
                               .Val("kind", w.kind));
    return out;
  }
  out.findings.push_back(Finding(Check::kShmPatchedAtCreation, volume)
                             .Num("required_bytes", required)
                             .Val("current", std::string(current))
                             .Val("kind", w.kind)
                             .Val("unknown", t.shm_unknown));
  return out;
}

}  // namespace

Remedy RemedyFor(const PodStage& s, const PodReading& r, PatchTarget target) {
  if (!s.t.patchable) {
    return JudgeUnpatched(s, r.mount, target.current, target.required_bytes, target.floor_bytes);
  }
  return PatchTo(s, r.facts, r.mount, std::move(target));
}

}  // namespace shmguard
