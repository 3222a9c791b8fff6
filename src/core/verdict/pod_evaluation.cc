// EvaluatePod: one pod template read (ReadPod), sized (SizePod), judged here — opted out,
// sized from its DataLoader annotations, or, without them, a GPU pod's floor and estimate — and
// handed to shm_remedy for the patch. Every reason is a Finding (checks.h); nothing here is put
// in words.
#include "core/verdict/internal/pod_evaluation.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "core/patch/shm_remedy.h"
#include "core/sizing/pod_sizing.h"

namespace shmguard::verdict {
namespace {

// Records `f` for `pe`'s pod.
void Add(PodEvaluation& pe, Finding f) {
  f.pod = pe.label;
  if (pe.findings.empty()) pe.findings.reserve(4);
  pe.findings.push_back(std::move(f));
}

// Records `findings`, in order, after those already recorded.
void AddAll(PodEvaluation& pe, std::vector<Finding> findings) {
  for (Finding& f : findings) f.pod = pe.label;
  if (pe.findings.empty()) {
    pe.findings = std::move(findings);
  } else {
    pe.findings.insert(pe.findings.end(), std::make_move_iterator(findings.begin()),
                       std::make_move_iterator(findings.end()));
  }
}

// An input error as a finding: annotation-invalid for a shmguard.io/ annotation, else
// object-invalid pointing at the field the error names.
Finding InputError(const PodTemplate& t, const Error& e) {
  if (!e.where.annotation.empty()) {
    const std::string& key = e.where.annotation;
    return std::move(
        Finding(Check::kAnnotationInvalid, t.AnnotationPointer(key)).Val("annotation", key).Val("error", e.message));
  }
  return std::move(Finding(Check::kObjectInvalid, !e.where.pointer.empty() ? e.where.pointer : t.spec_pointer)
                       .Val("where", e.where.ToString())
                       .Val("error", e.message));
}

// Records InputError(t, e) and denies.
void DenyWith(const PodTemplate& t, PodEvaluation& pe, const Error& e) {
  Add(pe, InputError(t, e));
  pe.verdict = Verdict::kDeny;
}

// The verdict the findings leave: kDeny while an error is not suppressed; a pod whose every
// error is exempted is kOk (and, denied, was never patched).
void Settle(PodEvaluation& pe, const PodContext& ctx) {
  bool error = false;
  for (auto& f : pe.findings) {
    f.suppressed = ctx.Exempt(f.check);
    error = error || (!f.suppressed && f.severity == Severity::kError);
  }
  if (error) {
    pe.verdict = Verdict::kDeny;
  } else if (pe.verdict == Verdict::kDeny) {
    pe.verdict = Verdict::kOk;
  }
}

Finding& WithFloor(Finding& f, const FloorNumbers& numbers) {
  for (const auto& [name, value] : numbers) f.Num(name, value);
  return f;
}

// Findings for the NCCL settings and the process layout the pod states.
std::vector<Finding> LaunchFindings(const PodTemplate& t, const PodFacts& f, bool all) {
  std::vector<Finding> out;
  if (!f.claims_unknown.empty()) {
    out.push_back(Finding(Check::kClaimsUnknown, t.spec_pointer + "/resourceClaims")
                      .Num("gpus", f.gpus)
                      .Num("procs", f.procs)
                      .Val("claims", f.claims_unknown)
                      .Val("procs_source", f.procs_source));
  }
  if (f.launch_unread) {
    out.push_back(Finding(Check::kLaunchUnread, f.launch_unread->where.pointer).Val("error", f.launch_unread->message));
  }
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

// True when every container requesting GPUs mounts /dev/shm (so none is left at 64Mi).
bool GpuContainersMountShm(const PodFacts& facts, const ShmMount& mount) {
  for (size_t i = 0; i < facts.containers.size(); ++i) {
    const ContainerFacts& c = facts.containers[i];
    bool operator_mounted = mount.implicit && i == 0;
    if (c.gpus > 0 && !operator_mounted && !c.mounts_shm) return false;
  }
  return true;
}

// A pod's evaluation as every path opens it: its label, its spec's pointer and the container
// default at /dev/shm.
PodEvaluation Opened(const PodTemplate& t) {
  PodEvaluation pe;
  pe.label = t.label;
  pe.path = t.spec_pointer;
  pe.current_shm = std::string(t.default_shm);
  pe.current_bytes = kContainerDefaultShmBytes;
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

// What the judgment leaves for the remedy: the size to give (or to check, for a kind shmguard
// does not patch), and for a sized pod denied there whether its plan goes ahead of the error.
struct Judged {
  PodEvaluation pe;
  std::optional<PatchTarget> target;
  bool plan_before_denial = false;
};

// A pod with DataLoader annotations: the plan, the memory limit, then what the remedy is to
// give it.
void JudgeSized(const PodStage& s, const PodReading& r, const PodSizing& z, Judged& j) {
  const PodTemplate& t = s.t;
  PodEvaluation& pe = j.pe;
  if (r.sizing_error) return DenyWith(t, pe, *r.sizing_error);
  if (r.facts_error) return DenyWith(t, pe, *r.facts_error);
  pe.memory_limit_bytes = r.facts.memory_limit_bytes;
  if (r.mount_error) return DenyWith(t, pe, *r.mount_error);
  pe.current_shm = r.current;
  pe.current_bytes = r.current_bytes;
  if (z.error) return DenyWith(t, pe, *z.error);
  pe.plan = z.plan;
  pe.required_bytes = z.required_bytes;
  // The plan is a sized pod's first finding: recorded now when every finding is, else only
  // ahead of a denial's (a /mutate warning cites the arithmetic it refuses).
  const bool all = s.ctx.detail == Detail::kAll;
  auto deny = [&](Finding f) {
    if (!all) Add(pe, *z.plan_finding);
    Add(pe, std::move(f));
  };
  if (all) Add(pe, *z.plan_finding);
  if (z.server_finding && all) Add(pe, *z.server_finding);
  if (z.learned && all) Add(pe, *z.learned);
  AddAll(pe, LaunchFindings(t, r.facts, all));
  if (auto read_only = ReadOnlyShm(r.facts, Severity::kError)) Add(pe, std::move(*read_only));

  const ShmMount& mount = r.mount;
  // A server with hostIPC and nothing at /dev/shm has the node's /dev/shm (containerd mounts it
  // when the pod mounts none): a dshm would take that away.
  if (z.kind == SizingKind::kServer && mount.kind == ShmMountKind::kNone && r.facts.host_ipc) return;
  if (mount.kind == ShmMountKind::kOther) {
    return deny(
        Finding(Check::kShmNotMemoryBacked, mount.volume_pointer.empty() ? t.spec_pointer : mount.volume_pointer)
            .Val("mount", mount.description));
  }
  if (z.limit.denial) return deny(*z.limit.denial);
  if (z.limit.missing) Add(pe, *z.limit.missing);
  if (z.limit.headroom && all) Add(pe, *z.limit.headroom);
  j.target = PatchTarget{z.target_bytes, &z.note, 0, nullptr, pe.current_shm};
  // Denied as it is, the plan goes ahead of the error, as for any denial.
  j.plan_before_denial = !t.patchable && !all;
}

// A GPU pod without DataLoader annotations (policy `unannotated`): what it has wins when it is
// at least the floor; otherwise it gets the estimate (or, for a memory emptyDir it sized
// itself, the floor).
void JudgeEstimated(const PodStage& s, const PodReading& r, const PodSizing& z, Judged& j) {
  const PodTemplate& t = s.t;
  const PodFacts& facts = r.facts;
  const ShmMount& mount = r.mount;
  const bool all = s.ctx.detail == Detail::kAll;
  PodEvaluation& pe = j.pe;
  pe.memory_limit_bytes = facts.memory_limit_bytes;
  pe.current_shm = r.current;
  pe.current_bytes = r.current_bytes;
  if (z.error) return DenyWith(t, pe, *z.error);
  pe.plan = z.plan;
  pe.estimated = true;
  // A profile replaces the estimate: the floor, raised to what the workload was seen to use.
  const int64_t floor = z.required_bytes;
  pe.required_bytes = floor;
  AddAll(pe, LaunchFindings(t, facts, all));
  if (auto read_only = ReadOnlyShm(facts, Severity::kWarning)) Add(pe, std::move(*read_only));
  if (z.limit.denial) {
    if (z.learned) Add(pe, *z.learned);
    return Add(pe, *z.limit.denial);
  }

  const std::string volume = mount.volume_pointer.empty() ? t.spec_pointer + "/volumes" : mount.volume_pointer;
  if (mount.kind == ShmMountKind::kOther) {
    // Without a plan, another volume at /dev/shm is the owner's choice: left as it is.
    if (all) Add(pe, Finding(Check::kShmNotMemoryBacked, volume).At(Severity::kInfo).Val("mount", mount.description));
    return;
  }
  if (z.learned && all) Add(pe, *z.learned);
  auto sufficient = [&] {
    Finding f(Check::kShmSufficient, volume);
    f.Val("current", pe.current_shm);
    if (z.learned) f.Num("learned_bytes", floor);
    return std::move(WithFloor(f, z.floor_numbers));
  };
  if (mount.kind == ShmMountKind::kNone && facts.host_ipc) {
    if (all) Add(pe, sufficient().Num("host_ipc", 1));
    return;
  }
  if (z.own_is_enough && GpuContainersMountShm(facts, mount)) {
    if (all) Add(pe, sufficient());
    return;
  }
  pe.required_bytes = z.target_bytes;
  // An MPS client gets no dshm: nothing was sized (mps-shm).
  if (t.patchable && !z.learned && facts.mps_resource.empty()) {
    Finding sized(Check::kSizedWithoutAnnotations, t.annotations_pointer);
    sized.Num("required_bytes", z.target_bytes).Val("basis", z.estimate->basis);
    if (mount.kind == ShmMountKind::kMemoryEmptyDir && !z.own_is_enough) sized.Num("from_bytes", *mount.size_limit);
    Add(pe, std::move(WithFloor(sized, z.floor_numbers)));
  }
  j.target = PatchTarget{z.target_bytes, &z.note, floor, &z.floor_numbers, pe.current_shm};
}

// A pod without DataLoader annotations that is not estimated: nothing to size without GPUs;
// with them, what the namespace's rule and the policy's `unannotated` rule say.
void JudgeUnannotated(const PodStage& s, const PodReading& r, Judged& j) {
  const PodTemplate& t = s.t;
  PodEvaluation& pe = j.pe;
  if (r.facts_error) return DenyWith(t, pe, *r.facts_error);
  pe.memory_limit_bytes = r.facts.memory_limit_bytes;
  pe.current_shm = r.current;
  pe.current_bytes = r.current_bytes;
  const bool all = s.ctx.detail == Detail::kAll;
  if (!r.facts.requests_gpus) {
    if (all) Add(pe, Finding(Check::kNoGpus, t.spec_pointer));
  } else if (s.rule.require_annotations) {
    Add(pe, Finding(Check::kAnnotationsRequired, t.annotations_pointer));
  } else if (s.policy.unannotated.mode == UnannotatedMode::kLeave) {
    if (all) Add(pe, Finding(Check::kUnannotatedLeft, t.annotations_pointer));
  } else {
    DenyWith(t, pe, *r.mount_error);  // a malformed mount matters to a GPU pod
  }
}

// One pod template's judgment: an error in how it was read, its shmguard.io/mode, or sized with
// or without DataLoader annotations.
Judged Judge(const PodStage& s, const PodReading& r, const PodSizing& z) {
  const PodTemplate& t = s.t;
  Judged j;
  if (t.error) {
    j.pe = Opened(t);
    DenyWith(t, j.pe, *t.error);
    return j;
  }
  j.pe = Started(s);
  if (auto mode = t.annotations.find(kModeAnnotation); mode != t.annotations.end()) {
    const std::string at = t.AnnotationPointer(kModeAnnotation);
    if (mode->second.Is("skip")) {
      j.pe.verdict = Verdict::kSkip;
      Add(j.pe, Finding(Check::kOptedOut, at));
    } else {
      Add(j.pe, Finding(Check::kAnnotationInvalid, at)
                    .Val("annotation", kModeAnnotation)
                    .Val("error", mode->second.Dump() + " is not understood; the only value is \"skip\""));
    }
  } else if (r.sized || z.kind == SizingKind::kServer) {
    JudgeSized(s, r, z, j);
  } else if (z.kind == SizingKind::kEstimate) {
    JudgeEstimated(s, r, z, j);
  } else {
    JudgeUnannotated(s, r, j);
  }
  return j;
}

}  // namespace

PodEvaluation EvaluatePod(const PodStage& s) {
  const PodReading r = ReadPod(s.t, s.policy);
  const PodSizing z = SizePod(s, r);
  Judged j = Judge(s, r, z);
  if (j.target) {
    Remedy remedy = RemedyFor(s, r, std::move(*j.target));
    PodEvaluation& pe = j.pe;
    AddAll(pe, std::move(remedy.findings));
    pe.verdict = remedy.verdict;
    pe.patch = std::move(remedy.patch);
    pe.changes = std::move(remedy.changes);
    if (remedy.error) DenyWith(s.t, pe, *remedy.error);
    if (j.plan_before_denial) {
      Settle(pe, s.ctx);
      if (pe.verdict == Verdict::kDeny) {
        Finding plan = *z.plan_finding;
        plan.pod = pe.label;
        pe.findings.insert(pe.findings.end() - 1, std::move(plan));
      }
    }
  }
  Settle(j.pe, s.ctx);
  return std::move(j.pe);
}

}  // namespace shmguard::verdict
