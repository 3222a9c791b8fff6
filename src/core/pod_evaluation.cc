// EvaluatePod: one pod template's verdict — opted out, sized from its DataLoader annotations,
// or, without them, a GPU pod's floor and estimate — handed to shm_remedy for the patch. Every
// reason is a Finding (checks.h); nothing here is put in words.
#include "pod_evaluation.h"

#include <algorithm>
#include <optional>

#include "shmguard/compact_json.h"
#include "shmguard/json_patch.h"
#include "shmguard/memory_limit.h"
#include "shmguard/pod_facts.h"
#include "shmguard/quantity.h"
#include "shmguard/shm_estimate.h"
#include "shmguard/shm_mount.h"
#include "shmguard/shm_profile.h"

namespace shmguard {
namespace {

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
                     Location::Annotation(kNumWorkersAnnotation));
  }
  in.workers = **workers;
  auto prefetch = ReadCountAnnotation(t.annotations, kPrefetchFactorAnnotation, 1, kMaxPrefetchFactor);
  if (!prefetch) return prefetch.error();
  in.prefetch = prefetch->value_or(policy.sizing.prefetch_factor);
  auto it = t.annotations.find(kBatchBytesAnnotation);
  const Location where = Location::Annotation(kBatchBytesAnnotation);
  if (it == t.annotations.end() || !it->second) {
    if (in.workers == 0) return in;  // no workers: batches never touch /dev/shm
    return MakeError(Code::kInvalidInput,
                     "is required when num-workers > 0: the bytes of one collated batch, e.g. 48Mi", where);
  }
  if (!it->second.IsString()) {
    return MakeError(Code::kInvalidInput, "annotation values must be strings: quote it (\"" + it->second.Dump() + "\")",
                     where);
  }
  auto bytes = ParseBytes(it->second.String(), kBatchBytesAnnotation);
  if (!bytes) return MakeError(bytes.error().code, bytes.error().message, where);
  in.batch_bytes = *bytes;
  return in;
}

// The plan as compact JSON with sorted keys — what json::dump would write, built directly:
// every value is a number or a quantity ([0-9A-Za-z.]), so nothing needs escaping.
// ',"observed":{...}' when the size was learned from a profile: the peak, the runs, when, and
// the workload; else nothing. It sorts between "nodes" and the keys after it.
std::string ObservedMember(const ObservedShm* o) {
  if (!o) return {};
  return R"(,"observed":{"last":)" + JsonQuoted(o->last_observed) + R"(,"peak":")" + FormatBytes(o->peak_bytes) +
         R"(","runs":)" + std::to_string(o->runs) + R"(,"workload":)" + JsonQuoted(o->workload) + "}";
}

std::string PlanAnnotation(const SizingInputs& in, const PodFacts& f, int64_t required, const ObservedShm* o) {
  return R"({"batchBytes":")" + FormatBytes(in.batch_bytes) + R"(","gpus":)" + std::to_string(f.gpus) + R"(,"nodes":)" +
         std::to_string(f.nodes) + ObservedMember(o) + R"(,"prefetchFactor":)" + std::to_string(in.prefetch) +
         R"(,"procs":)" + std::to_string(f.procs) + R"(,"required":")" + FormatBytes(required) + R"(","workers":)" +
         std::to_string(in.workers) + "}";
}

// The plan annotation of an estimated size: what it was estimated from, sorted keys.
std::string EstimateAnnotation(const ShmEstimate& e, const PodFacts& f, int64_t required, const ObservedShm* o) {
  return R"({"estimated":)" + JsonQuoted(e.basis) + R"(,"floor":")" + FormatBytes(e.floor_bytes) + R"(","gpus":)" +
         std::to_string(f.gpus) + R"(,"nodes":)" + std::to_string(f.nodes) + ObservedMember(o) + R"(,"procs":)" +
         std::to_string(f.procs) + R"(,"required":")" + FormatBytes(required) + "\"}";
}

// The size the workload's profile asks for, `formula` bytes being what the formula gives
// (the plan, or an unannotated pod's floor): max(formula, peak × margin), with its
// sized-from-observation finding. nullopt without a profile.
struct Learned {
  int64_t required_bytes;
  Finding finding;
};
std::optional<Learned> Learn(const PodTemplate& t, const PodContext& ctx, const Policy& policy, int64_t formula) {
  const ObservedShm* o = ctx.observed;
  if (!o || o->peak_bytes <= 0) return std::nullopt;
  const int64_t learned = LearnedBytes(o->peak_bytes, policy.observed.margin_ppm);
  Learned out{std::max(formula, learned), Finding(Check::kSizedFromObservation, AnnotationsPointer(t))};
  out.finding.Num("required_bytes", out.required_bytes)
      .Num("learned_bytes", learned)
      .Num("formula_bytes", formula)
      .Num("peak_bytes", o->peak_bytes)
      .Num("margin_ppm", policy.observed.margin_ppm)
      .Num("runs", o->runs)
      .Val("workload", o->workload)
      .Val("last_observed", o->last_observed)
      .Val("last_pod", o->last_pod);
  return out;
}

// What /dev/shm is named in findings: the volume shmguard adds, or a Compose service's.
const char* ShmName(const PodTemplate& t) { return t.compose_service ? "/dev/shm" : "dshm"; }

// shm-plan: the arithmetic of a sized pod's plan, pointing at its num-workers annotation.
Finding PlanFinding(const PodTemplate& t, const ShmPlan& p, const SizingConstants& k, const PodFacts& f) {
  return ShmPlanFinding(p, k, ShmName(t), f.procs_source, AnnotationPointer(t, kNumWorkersAnnotation));
}

// Findings for the NCCL settings and the process layout the pod states.
std::vector<Finding> LaunchFindings(const PodTemplate& t, const PodFacts& f, bool all) {
  std::vector<Finding> out;
  if (f.procs_stated && f.gpus > 0 && f.procs != f.gpus) {  // a warning: recorded for /mutate too
    out.push_back(Finding(Check::kProcsGpusMismatch, f.procs_pointer)
                      .Num("procs", f.procs)
                      .Num("gpus", f.gpus)
                      .Val("procs_source", f.procs_source));
  }
  if (!all) return out;
  if (f.nccl_shm_disabled && f.procs >= 2) {
    out.push_back(Finding(Check::kNcclShmDisabled, t.spec_pointer).Val("source", f.nccl_shm_disabled_source));
  }
  if (f.nccl_p2p_disabled) {
    out.push_back(Finding(Check::kNcclP2pDisabled, t.spec_pointer).Val("source", f.nccl_p2p_disabled_source));
  }
  if (f.gpus == 1 && f.nodes > 1) {
    out.push_back(
        Finding(Check::kSingleGpuPods, t.spec_pointer).Num("pods", f.nodes).Val("pods_source", f.nodes_source));
  }
  return out;
}

// shm-read-only: the containers that mount /dev/shm read-only, pointing at the first's mounts.
// An error for a pod whose DataLoader is declared (it will write there), a warning otherwise.
std::optional<Finding> ReadOnlyShm(const PodFacts& f, Severity severity) {
  std::string names, pointer;
  for (const ContainerFacts& c : f.containers) {
    if (!c.shm_read_only) continue;
    names += (names.empty() ? "" : ", ") + c.name;
    if (pointer.empty()) pointer = c.pointer + "/volumeMounts";
  }
  if (names.empty()) return std::nullopt;
  return std::move(Finding(Check::kShmReadOnly, pointer).At(severity).Val("containers", names));
}

// A pod's evaluation as every stage opens it: its label, its spec's pointer and the container
// default at /dev/shm.
PodEvaluation Opened(const PodTemplate& t) {
  PodEvaluation pe;
  pe.label = t.label;
  pe.path = t.spec_pointer;
  pe.current_shm = t.compose_service ? "64Mi (Docker's default)" : "64Mi (container default)";
  return pe;
}

// Opened, with the findings of how the template was read (a Compose GPU count).
PodEvaluation Started(const PodStage& s) {
  PodEvaluation pe = Opened(s.t);
  for (const Finding& f : s.t.findings) {
    if (s.ctx.detail == Detail::kAll || f.severity != Severity::kInfo) Add(pe, f);
  }
  return pe;
}

// A pod with DataLoader annotations: the plan, the memory limit, then the patch or, for a kind
// shmguard does not patch, what it has.
PodEvaluation EvaluateSized(const PodStage& s) {
  const PodTemplate& t = s.t;
  const Policy& policy = s.policy;
  const PodContext& ctx = s.ctx;
  PodEvaluation pe = Started(s);
  auto sizing = ReadSizing(t, policy);
  if (!sizing) {
    DenyWith(t, pe, sizing.error());
    return pe;
  }
  auto facts = ReadPodFacts(t, policy);
  if (!facts) {
    DenyWith(t, pe, facts.error());
    return pe;
  }
  pe.memory_limit_bytes = facts->memory_limit_bytes;
  auto mount = ReadShm(t, *facts);
  if (!mount) {
    DenyWith(t, pe, mount.error());
    return pe;
  }
  pe.current_shm = DescribeShm(*mount, t, *facts);

  ShmInputs in = PodShmInputs(*facts);
  in.workers = sizing->workers;
  in.prefetch_factor = sizing->prefetch;
  in.batch_bytes = sizing->batch_bytes;
  auto plan = PlanShm(in, policy.sizing);
  if (!plan) {
    DenyWith(t, pe, plan.error());
    return pe;
  }
  pe.plan = *plan;
  std::optional<Learned> learned = Learn(t, ctx, policy, plan->required_bytes);
  const int64_t required = learned ? learned->required_bytes : plan->required_bytes;
  pe.required_bytes = required;
  // The plan is a sized pod's first finding: recorded now when every finding is, else only
  // ahead of a denial's (a /mutate warning cites the arithmetic it refuses).
  const bool all = ctx.detail == Detail::kAll;
  auto deny = [&](Finding f) {
    if (!all) Add(pe, PlanFinding(t, *plan, policy.sizing, *facts));
    Add(pe, std::move(f));
  };
  if (all) Add(pe, PlanFinding(t, *plan, policy.sizing, *facts));
  if (learned && all) Add(pe, learned->finding);
  AddAll(pe, LaunchFindings(t, *facts, all));
  if (auto read_only = ReadOnlyShm(*facts, Severity::kError)) Add(pe, std::move(*read_only));

  if (mount->kind == ShmMountKind::kOther) {
    deny(Finding(Check::kShmNotMemoryBacked, mount->volume_pointer.empty() ? t.spec_pointer : mount->volume_pointer)
             .Val("mount", mount->description));
    return pe;
  }
  ShmUse use{ShmName(t), false, static_cast<bool>(t.compose_service)};
  LimitCheck limit = CheckLimit(required, *facts, policy, use);
  if (limit.denial) {
    deny(std::move(*limit.denial));
    return pe;
  }
  if (limit.missing) Add(pe, std::move(*limit.missing));
  if (limit.headroom && all) Add(pe, std::move(*limit.headroom));
  if (!t.patchable) {
    Apply(pe, JudgeUnpatched(s, *mount, pe.current_shm, required));
    Settle(pe, ctx);
    // Denied, the plan goes ahead of the error, as for any denial.
    if (!all && pe.verdict == Verdict::kDeny) {
      Finding plan_finding = PlanFinding(t, *plan, policy.sizing, *facts);
      plan_finding.pod = pe.label;
      pe.findings.insert(pe.findings.end() - 1, std::move(plan_finding));
    }
    return pe;
  }
  Apply(pe, PatchTo(s, *facts, *mount,
                    {required, PlanAnnotation(*sizing, *facts, required, ctx.observed), nullptr, pe.current_shm}));
  return pe;
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
// REQUIRES: `mount` is what `s.t` has at /dev/shm (ReadShm).
PodEvaluation EvaluateEstimated(const PodStage& s, const PodFacts& facts, const ShmMount& mount) {
  const PodTemplate& t = s.t;
  const Policy& policy = s.policy;
  const PodContext& ctx = s.ctx;
  const bool all = ctx.detail == Detail::kAll;
  PodEvaluation pe = Started(s);
  pe.memory_limit_bytes = facts.memory_limit_bytes;
  pe.current_shm = DescribeShm(mount, t, facts);
  auto estimate = EstimateShm(facts, policy);
  if (!estimate) {
    DenyWith(t, pe, estimate.error());
    return pe;
  }
  pe.plan = estimate->floor_plan;
  pe.estimated = true;
  // A profile replaces the estimate: the floor, raised to what the workload was seen to use.
  std::optional<Learned> learned = Learn(t, ctx, policy, estimate->floor_bytes);
  const int64_t floor = learned ? learned->required_bytes : estimate->floor_bytes;
  pe.required_bytes = floor;
  AddAll(pe, LaunchFindings(t, facts, all));
  if (auto read_only = ReadOnlyShm(facts, Severity::kWarning)) Add(pe, std::move(*read_only));
  if (auto over = MemoryLimitDenial(floor, facts, policy, {ShmName(t), true, false})) {
    FloorNumbers(*over, *estimate, policy);
    if (learned) Add(pe, learned->finding);
    Add(pe, std::move(*over));
    return pe;
  }

  const std::string volume = mount.volume_pointer.empty() ? t.spec_pointer + "/volumes" : mount.volume_pointer;
  if (mount.kind == ShmMountKind::kOther) {
    // Without a plan, another volume at /dev/shm is the owner's choice: left as it is.
    if (all) {
      Add(pe, Finding(Check::kShmNotMemoryBacked, volume).At(Severity::kInfo).Val("mount", mount.description));
    }
    return pe;
  }
  if (learned && all) Add(pe, learned->finding);
  auto sufficient = [&] {
    Finding f(Check::kShmSufficient, volume);
    f.Val("current", pe.current_shm);
    if (learned) f.Num("learned_bytes", floor);
    return std::move(FloorNumbers(f, *estimate, policy));
  };
  if (mount.kind == ShmMountKind::kNone && facts.host_ipc) {
    if (all) Add(pe, sufficient().Num("host_ipc", 1));
    return pe;
  }
  const bool own_is_enough =
      mount.kind == ShmMountKind::kMemoryEmptyDir && (!mount.size_limit || *mount.size_limit >= floor);
  if (own_is_enough && GpuContainersMountShm(facts, mount)) {
    if (all) Add(pe, sufficient());
    return pe;
  }

  // What it has is below the floor: a memory emptyDir of its own is raised only to the floor.
  // With a profile, the learned size is the floor and stands in for the estimate.
  const int64_t size = mount.kind == ShmMountKind::kMemoryEmptyDir ? std::max(floor, mount.size_limit.value_or(0))
                       : learned                                   ? floor
                                                                   : estimate->estimate_bytes;
  pe.required_bytes = size;
  if (!t.patchable) {
    Apply(pe, JudgeUnpatched(s, mount, pe.current_shm, size, floor));
    return pe;
  }
  if (!learned && facts.mps_resource.empty()) {  // an MPS client gets no dshm: nothing was sized (mps-shm)
    Finding sized(Check::kSizedWithoutAnnotations, AnnotationsPointer(t));
    sized.Num("required_bytes", size).Val("basis", estimate->basis);
    if (mount.kind == ShmMountKind::kMemoryEmptyDir && !own_is_enough) sized.Num("from_bytes", *mount.size_limit);
    Add(pe, std::move(FloorNumbers(sized, *estimate, policy)));
  }
  Apply(pe, PatchTo(s, facts, mount,
                    {size, EstimateAnnotation(*estimate, facts, size, ctx.observed), &*estimate, pe.current_shm}));
  return pe;
}

// A pod without DataLoader annotations: nothing to size without GPUs; with them, what the
// namespace's rule and the policy's `unannotated` rule say (EvaluateEstimated).
PodEvaluation EvaluateUnannotated(const PodStage& s) {
  const PodTemplate& t = s.t;
  auto facts = ReadPodFacts(t, s.policy);
  // What it has at /dev/shm, for every pod; a malformed mount only matters to a GPU pod.
  Result<ShmMount> mount = facts ? ReadShm(t, *facts) : Result<ShmMount>(facts.error());
  const bool leave = s.policy.unannotated.mode == UnannotatedMode::kLeave;
  if (facts && facts->requests_gpus && !s.rule.require_annotations && !leave && mount) {
    return EvaluateEstimated(s, *facts, *mount);
  }
  PodEvaluation pe = Started(s);
  if (!facts) {
    DenyWith(t, pe, facts.error());
    return pe;
  }
  pe.memory_limit_bytes = facts->memory_limit_bytes;
  if (mount) pe.current_shm = DescribeShm(*mount, t, *facts);
  const bool all = s.ctx.detail == Detail::kAll;
  if (!facts->requests_gpus) {
    if (all) Add(pe, Finding(Check::kNoGpus, t.spec_pointer));
  } else if (s.rule.require_annotations) {
    Add(pe, Finding(Check::kAnnotationsRequired, AnnotationsPointer(t)));
  } else if (leave) {
    if (all) Add(pe, Finding(Check::kUnannotatedLeft, AnnotationsPointer(t)));
  } else {
    DenyWith(t, pe, mount.error());
  }
  return pe;
}

// One pod template's stage: an error in how it was read, its shmguard.io/mode, or sized with or
// without DataLoader annotations.
PodEvaluation EvaluateStage(const PodStage& s) {
  const PodTemplate& t = s.t;
  auto mode = t.annotations.find(kModeAnnotation);
  if (!t.error && mode == t.annotations.end()) {
    if (Has(t.annotations, kNumWorkersAnnotation) || Has(t.annotations, kBatchBytesAnnotation)) {
      return EvaluateSized(s);
    }
    return EvaluateUnannotated(s);
  }
  if (t.error) {
    PodEvaluation pe = Opened(t);
    DenyWith(t, pe, *t.error);
    return pe;
  }
  PodEvaluation pe = Started(s);
  if (mode->second.Is("skip")) {
    pe.verdict = Verdict::kSkip;
    Add(pe, Finding(Check::kOptedOut, AnnotationPointer(t, kModeAnnotation)));
  } else {
    Add(pe, Finding(Check::kAnnotationInvalid, AnnotationPointer(t, kModeAnnotation))
                .Val("annotation", kModeAnnotation)
                .Val("error", mode->second.Dump() + " is not understood; the only value is \"skip\""));
  }
  return pe;
}

}  // namespace

PodEvaluation EvaluatePod(const PodStage& s) {
  PodEvaluation pe = EvaluateStage(s);
  Settle(pe, s.ctx);
  return pe;
}

}  // namespace shmguard
