// EvaluatePod: one pod template's verdict — opted out, sized from its DataLoader annotations,
// or, without them, a GPU pod's floor and estimate — handed to shm_remedy for the patch.
#include "pod_evaluation.h"

#include <algorithm>
#include <optional>

#include "shm_remedy.h"
#include "shmguard/compact_json.h"
#include "shmguard/memory_limit.h"
#include "shmguard/pod_facts.h"
#include "shmguard/quantity.h"
#include "shmguard/shm_estimate.h"
#include "shmguard/shm_mount.h"

namespace shmguard {
namespace {

// "annotation shmguard.io/...", where a reason says a value came from. Appended rather than
// concatenated: GCC 12 at -O2 reports a false -Warray-bounds on string("...") + const char*.
std::string AnnotationField(const char* key) {
  std::string out = "annotation ";
  out.append(key);
  return out;
}

bool Has(const Annotations& a, const char* key) {
  auto it = a.find(key);
  return it != a.end() && it->second;
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
                     AnnotationField(kNumWorkersAnnotation));
  }
  in.workers = **workers;
  auto prefetch = ReadCountAnnotation(t.annotations, kPrefetchFactorAnnotation, 1, kMaxPrefetchFactor);
  if (!prefetch) return prefetch.error();
  in.prefetch = prefetch->value_or(policy.sizing.prefetch_factor);
  auto it = t.annotations.find(kBatchBytesAnnotation);
  std::string where = AnnotationField(kBatchBytesAnnotation);
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

// What /dev/shm is named in reasons: the volume shmguard adds, or a Compose service's.
const char* ShmName(const PodTemplate& t) { return t.compose_service ? "/dev/shm" : "dshm"; }

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

void EvaluateSized(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
                   Wording wording, PodEvaluation& pe) {
  auto sizing = ReadSizing(t, policy);
  if (!sizing) return DenyWith(pe, sizing.error());
  auto facts = ReadPodFacts(t, policy);
  if (!facts) return DenyWith(pe, facts.error());
  pe.memory_limit_bytes = facts->memory_limit_bytes;
  auto mount = ReadShm(t, *facts);
  if (!mount) return DenyWith(pe, mount.error());
  pe.current_shm = DescribeShm(*mount, t, *facts);

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
// REQUIRES: `mount` is what `t` has at /dev/shm (ReadShm).
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
      MemoryLimitDenial(estimate->floor_bytes, "floor of a GPU pod", facts, policy, "raise the memory limit");
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

void EvaluatePodInto(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
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
      pe.reasons.push_back("opted out with " + std::string(kModeAnnotation) + ": skip");
      return;
    }
    pe.verdict = Verdict::kDeny;
    std::string reason = AnnotationField(kModeAnnotation);
    reason.append(": ").append(mode->second.Dump()).append(" is not understood; the only value is \"skip\"");
    pe.reasons.push_back(std::move(reason));
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
  if (mount) pe.current_shm = DescribeShm(*mount, t, *facts);
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

}  // namespace

PodEvaluation EvaluatePod(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
                          Wording wording) {
  PodEvaluation pe;
  EvaluatePodInto(t, w, rule, policy, wording, pe);
  return pe;
}

}  // namespace shmguard
