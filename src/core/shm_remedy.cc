// PatchTo, UnpatchedDenial, UnpatchedCovered: the verdict of a pod whose /dev/shm size is known.
#include "shm_remedy.h"

#include "shmguard/compose.h"
#include "shmguard/quantity.h"
#include "shmguard/shm_patch.h"

namespace shmguard {
namespace {

// A memory emptyDir with no sizeLimit is bounded only by the memory limit: it covers any size.
bool Covers(const ShmMount& mount, int64_t required) {
  return mount.kind == ShmMountKind::kMemoryEmptyDir && (!mount.size_limit || *mount.size_limit >= required);
}

// The patch's options for a pod under `rule`, with the Pod Security warnings they imply.
PatchOptions PodPatchOptions(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
                             const PodFacts& facts, PodEvaluation& pe) {
  const bool privileged = rule.pod_security == PodSecurityLevel::kPrivileged;
  const bool want_host_ipc =
      policy.host_ipc == HostIpcMode::kAlways || (policy.host_ipc == HostIpcMode::kAuto && facts.gpus >= 2);
  PatchOptions options;
  options.host_ipc = want_host_ipc && privileged && t.has_host_ipc;
  if (want_host_ipc && privileged && !t.has_host_ipc) {
    pe.warnings.push_back("hostIPC not set: a " + w.kind + " has no hostIPC field for its pods");
  }
  options.ipc_lock = privileged ? policy.ipc_lock : ContainerSelection::kNever;
  options.init_container_mounts = policy.init_container_mounts;
  if (!privileged) {
    std::string level = PodSecurityLevelName(rule.pod_security);
    if (want_host_ipc) pe.warnings.push_back("hostIPC not set: Pod Security " + level + " forbids it");
    bool any_lock = policy.ipc_lock == ContainerSelection::kAll ||
                    (policy.ipc_lock == ContainerSelection::kGpuContainers && facts.gpus > 0);
    if (any_lock) pe.warnings.push_back("IPC_LOCK not added: Pod Security " + level + " forbids it");
  }
  if (!w.is_pod) {  // controller annotations do not reach the pods: copy the effective ones
    for (const char* key : {kNumWorkersAnnotation, kPrefetchFactorAnnotation, kBatchBytesAnnotation,
                            kProcsPerPodAnnotation, kNodesAnnotation}) {
      auto it = t.annotations.find(key);
      if (it != t.annotations.end() && it->second.IsString()) options.annotations[key] = it->second.String();
    }
    if (facts.nodes > 1) options.annotations[kNodesAnnotation] = std::to_string(facts.nodes);
  }
  return options;
}

}  // namespace

void DenyWith(PodEvaluation& pe, const Error& e) {
  pe.verdict = Verdict::kDeny;
  pe.reasons.push_back(e.ToString());
}

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
  Result<PodPatch> patch = PodPatch{};
  if (t.compose_service) {  // no Pod Security, no hostIPC, no annotations: shm_size and ulimits
    if (facts.host_ipc && everything) {
      pe.reasons.push_back(
          "ipc: host: the service uses the host's /dev/shm, which Docker does not size (it ignores "
          "shm_size then); the host needs " +
          FormatBytes(required) + " free there");
    }
    PatchOptions options;
    options.required_bytes = required;
    options.ipc_lock = policy.ipc_lock;
    options.describe_changes = everything;
    patch = BuildServicePatch(t, facts, mount, options);
  } else {
    PatchOptions options = PodPatchOptions(t, w, rule, policy, facts, pe);
    options.required_bytes = required;
    options.describe_changes = everything;
    options.annotations[kPlanAnnotation] = std::move(plan_json);
    patch = BuildPodPatch(t, facts, mount, options);
  }
  if (!patch) return DenyWith(pe, patch.error());
  pe.verdict = patch->ops.empty() ? Verdict::kOk : Verdict::kPatch;
  pe.patch = std::move(patch->ops);
  pe.changes = std::move(patch->changes);
}

std::optional<std::string> UnpatchedDenial(const PodTemplate& t, const Workload& w, const ShmMount& mount,
                                           const std::string& current, int64_t required) {
  if (Covers(mount, required)) return std::nullopt;
  if (t.pods_patched_at_creation && mount.kind != ShmMountKind::kOther) return std::nullopt;
  std::string fix = t.operator_shm ? "raise the Ray container's memory limit (KubeRay sizes /dev/shm to it) or mount "
                                     "an emptyDir {medium: Memory} of that size at /dev/shm"
                                   : "mount an emptyDir {medium: Memory} of that size at /dev/shm";
  return "/dev/shm is " + current + ", below the " + FormatBytes(required) + " needed; shmguard does not patch a " +
         w.kind + ": " + fix;
}

std::string UnpatchedCovered(const PodTemplate& t, const Workload& w, const ShmMount& mount, const std::string& current,
                             int64_t required) {
  if (Covers(mount, required)) {
    return "/dev/shm " + current + " covers the " + FormatBytes(required) + " needed (shmguard does not patch a " +
           w.kind + ")";
  }
  if (!t.shm_unknown.empty()) {
    return "needs /dev/shm of " + FormatBytes(required) + "; what its pods have is unknown (" + t.shm_unknown +
           "); shmguard patches them when they are created if they have less";
  }
  return "/dev/shm is " + current + ", below the " + FormatBytes(required) + " needed: shmguard does not patch a " +
         w.kind + "; its pods are patched when they are created";
}

}  // namespace shmguard
