// SizePod: the plan or the estimate, the profile, the memory limit, and the numbers the plan
// annotation records.
#include "core/sizing/pod_sizing.h"

#include <algorithm>

#include "core/values/quantity.h"

namespace shmguard {
namespace {

// Which sizing applies to the pod, kNone when none does (SizePod's contract).
SizingKind KindOf(const PodStage& s, const PodReading& r) {
  const Policy& policy = s.policy;
  if (r.sized) return r.sizing_error || r.facts_error || r.mount_error ? SizingKind::kNone : SizingKind::kPlan;
  const bool readable =
      !r.facts_error && !r.mount_error && r.facts.requests_gpus && policy.unannotated.mode != UnannotatedMode::kLeave;
  // A server's plan is exact from its launch: a namespace that requires DataLoader annotations
  // has nothing to ask of it. Only GPU pods, as for every pod without DataLoader annotations
  // (the webhooks' matchConditions send shmguard no others): a CPU-only Ray node is left to
  // KubeRay's own /dev/shm.
  if (r.server && readable) return SizingKind::kServer;
  return readable && !s.rule.require_annotations ? SizingKind::kEstimate : SizingKind::kNone;
}

// The formula's size into z: the plan (kPlan, kServer), or the floor and the estimate.
void SizeByFormula(const PodStage& s, const PodReading& r, PodSizing& z) {
  const Policy& policy = s.policy;
  if (z.kind != SizingKind::kEstimate) {
    auto plan = PlanShm(r.inputs, policy.sizing);
    if (!plan) {
      z.error = plan.error();
      return;
    }
    z.plan = *plan;
    z.required_bytes = plan->required_bytes;
    return;
  }
  auto estimate = EstimateShm(r.inputs, r.facts.memory_limit_bytes, policy);
  if (!estimate) {
    z.error = estimate.error();
    return;
  }
  z.estimate = std::move(*estimate);
  z.plan = z.estimate->floor_plan;
  z.required_bytes = z.estimate->floor_bytes;
  const ShmInputs& in = z.plan.inputs;
  z.floor_numbers = {{"floor_bytes", z.estimate->floor_bytes},
                     {"floor_plan_bytes", z.plan.required_bytes},
                     {"minimum_bytes", policy.unannotated.minimum_bytes},
                     {"procs", in.procs},
                     {"nccl_shm", in.procs >= 2 && in.nccl_shm ? 1 : 0},
                     {"nccl_proxy", in.nodes > 1 ? 1 : 0}};
}

// A profile: max(formula, peak × margin), with its sized-from-observation finding.
void RaiseToObserved(const PodStage& s, PodSizing& z) {
  const ObservedShm* observed = s.ctx.observed;
  if (!observed || observed->peak_bytes <= 0) return;
  const int64_t formula = z.required_bytes;
  const int64_t learned = LearnedBytes(observed->peak_bytes, s.policy.observed.margin_ppm);
  z.required_bytes = std::max(formula, learned);
  z.learned = Finding(Check::kSizedFromObservation, s.t.annotations_pointer);
  z.learned->Num("required_bytes", z.required_bytes)
      .Num("learned_bytes", learned)
      .Num("formula_bytes", formula)
      .Num("peak_bytes", observed->peak_bytes)
      .Num("margin_ppm", s.policy.observed.margin_ppm)
      .Num("runs", observed->runs)
      .Val("workload", observed->workload)
      .Val("last_observed", observed->last_observed)
      .Val("last_pod", observed->last_pod);
}

// sized-from-server-launch: what was read of the server's launch and what it allocates.
Finding ServerFinding(const PodReading& r, int64_t required) {
  const ServerLaunch& l = *r.facts.server;
  Finding found(Check::kSizedFromServerLaunch, l.pointer);
  found.Num("required_bytes", required)
      .Num("server_bytes", r.server->bytes)
      .Val("server", std::string(ServerTitle(l.server)))
      .Val("launched_by", l.launched_by)
      .Val("read", ServerFlagsText(l))
      .Val("terms", ServerTermsText(*r.server))
      .Val("unbounded", r.server->unbounded);
  if (!l.unread.empty()) {
    std::string unread;
    for (const auto& flag : l.unread) unread += (unread.empty() ? "" : ", ") + flag;
    found.Val("unread", std::move(unread)).Num("gpus", r.facts.gpus);
  }
  if (!r.server->unchecked.empty()) found.Val("unchecked", r.server->unchecked);
  if (!l.config_file.empty()) found.Val("config", l.config_file).Num("gpus", r.facts.gpus);
  return found;
}

// A plan's (kPlan, kServer) memory limit, findings and size: the plan's size as it is.
void SizePlanned(const PodStage& s, const PodReading& r, PodSizing& z) {
  const PodTemplate& t = s.t;
  const PodFacts& f = r.facts;
  z.limit = CheckLimit(z.required_bytes, f, s.policy,
                       {t.shm_name, false, static_cast<bool>(t.compose_service), z.kind == SizingKind::kServer});
  // shm-plan, where the judgment records it: with every finding, or ahead of a denial.
  if (s.ctx.detail == Detail::kAll || !t.patchable || r.mount.kind == ShmMountKind::kOther || z.limit.denial) {
    z.plan_finding = ShmPlanFinding(z.plan, s.policy.sizing, t.shm_name, f.procs_source,
                                    r.server ? f.server->pointer : t.AnnotationPointer(kNumWorkersAnnotation));
    if (r.server) z.plan_finding->Val("server_terms", ServerTermsText(*r.server));
  }
  z.target_bytes = z.required_bytes;
  if (z.kind == SizingKind::kServer) {
    z.server_finding = ServerFinding(r, z.required_bytes);
    z.note.server = f.server->server;
    z.note.server_bytes = r.server->bytes;
  } else {
    z.note.workers = r.inputs.workers;
    z.note.prefetch_factor = r.inputs.prefetch_factor;
    z.note.batch_bytes = r.inputs.batch_bytes;
  }
}

// An estimate's denial, and the size a patch gives: what the pod has at /dev/shm below the
// floor, a memory emptyDir of its own, is raised only to the floor; with a profile, the learned
// size is the floor and stands in for the estimate.
void SizeEstimated(const PodStage& s, const PodReading& r, PodSizing& z) {
  const int64_t required = z.required_bytes;
  z.limit.denial = MemoryLimitDenial(required, r.facts, s.policy, {s.t.shm_name, true, false});
  if (z.limit.denial) {
    for (const auto& [name, value] : z.floor_numbers) z.limit.denial->Num(name, value);
  }
  const ShmMount& mount = r.mount;
  const bool own = mount.kind == ShmMountKind::kMemoryEmptyDir;
  z.own_is_enough = own && (!mount.size_limit || *mount.size_limit >= required);
  z.target_bytes = own         ? std::max(required, mount.size_limit.value_or(0))
                   : z.learned ? required
                               : z.estimate->estimate_bytes;
  z.note.estimated = z.estimate->basis;
  z.note.floor_bytes = z.estimate->floor_bytes;
}

}  // namespace

PodSizing SizePod(const PodStage& s, const PodReading& r) {
  PodSizing z;
  if (s.t.error || s.t.annotations.count(kModeAnnotation)) return z;
  z.kind = KindOf(s, r);
  if (z.kind == SizingKind::kNone) return z;
  SizeByFormula(s, r, z);
  if (z.error) return z;
  RaiseToObserved(s, z);
  if (z.kind == SizingKind::kEstimate) {
    SizeEstimated(s, r, z);
  } else {
    SizePlanned(s, r, z);
  }
  z.note.kind = z.kind;
  z.note.gpus = r.facts.gpus;
  z.note.nodes = r.facts.nodes;
  z.note.procs = r.facts.procs;
  z.note.required_bytes = z.target_bytes;
  z.note.observed = s.ctx.observed;
  return z;
}

}  // namespace shmguard
