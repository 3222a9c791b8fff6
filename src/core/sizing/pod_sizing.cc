// SizePod: the plan or the estimate, the profile, the memory limit, the plan annotation.
#include "pod_sizing.h"

#include <algorithm>

#include "shmguard/plan/shm_profile.h"
#include "shmguard/values/compact_json.h"
#include "shmguard/values/quantity.h"

namespace shmguard {
namespace {

// The plan annotation's "observed" member when the size was learned from a profile: the peak,
// the runs, when, and the workload; else nothing. Compact JSON with sorted keys, as json::dump
// writes it; it sorts between "nodes" and the keys after it.
std::string ObservedMember(const ObservedShm* o) {
  if (!o) return {};
  return R"(,"observed":{"last":)" + JsonQuoted(o->last_observed) + R"(,"peak":")" + FormatBytes(o->peak_bytes) +
         R"(","runs":)" + std::to_string(o->runs) + R"(,"workload":)" + JsonQuoted(o->workload) + "}";
}

}  // namespace

PodSizing SizePod(const PodStage& s, const PodReading& r) {
  const PodTemplate& t = s.t;
  const Policy& policy = s.policy;
  const ObservedShm* observed = s.ctx.observed;
  const PodFacts& f = r.facts;
  PodSizing z;
  if (t.error || t.annotations.count(kModeAnnotation)) return z;
  const std::string observed_member = ObservedMember(observed);
  if (r.sized) {
    if (r.sizing_error || r.facts_error || r.mount_error) return z;
    z.kind = SizingKind::kPlan;
  } else if (r.server && !r.facts_error && !r.mount_error && f.requests_gpus &&
             policy.unannotated.mode != UnannotatedMode::kLeave) {
    // A server's plan is exact from its launch: a namespace that requires DataLoader
    // annotations has nothing to ask of it. Only GPU pods, as for every pod without DataLoader
    // annotations (the webhooks' matchConditions send shmguard no others): a CPU-only Ray node
    // is left to KubeRay's own /dev/shm.
    z.kind = SizingKind::kServer;
  } else {
    const bool estimated = !r.facts_error && f.requests_gpus && !s.rule.require_annotations &&
                           policy.unannotated.mode != UnannotatedMode::kLeave && !r.mount_error;
    if (!estimated) return z;
    z.kind = SizingKind::kEstimate;
  }

  // The formula: the plan, or the floor and estimate.
  int64_t formula = 0;
  const bool planned = z.kind == SizingKind::kPlan || z.kind == SizingKind::kServer;
  if (planned) {
    auto plan = PlanShm(r.inputs, policy.sizing);
    if (!plan) {
      z.error = plan.error();
      return z;
    }
    z.plan = *plan;
    formula = plan->required_bytes;
  } else {
    auto estimate = EstimateShm(r.inputs, f.memory_limit_bytes, policy);
    if (!estimate) {
      z.error = estimate.error();
      return z;
    }
    z.estimate = std::move(*estimate);
    z.plan = z.estimate->floor_plan;
    formula = z.estimate->floor_bytes;
    const ShmInputs& in = z.plan.inputs;
    z.floor_numbers = {{"floor_bytes", z.estimate->floor_bytes},
                       {"floor_plan_bytes", z.plan.required_bytes},
                       {"minimum_bytes", policy.unannotated.minimum_bytes},
                       {"procs", in.procs},
                       {"nccl_shm", in.procs >= 2 && in.nccl_shm ? 1 : 0},
                       {"nccl_proxy", in.nodes > 1 ? 1 : 0}};
  }

  // A profile: max(formula, peak × margin), with its sized-from-observation finding.
  z.required_bytes = formula;
  if (observed && observed->peak_bytes > 0) {
    const int64_t learned = LearnedBytes(observed->peak_bytes, policy.observed.margin_ppm);
    z.required_bytes = std::max(formula, learned);
    z.learned = Finding(Check::kSizedFromObservation, t.annotations_pointer);
    z.learned->Num("required_bytes", z.required_bytes)
        .Num("learned_bytes", learned)
        .Num("formula_bytes", formula)
        .Num("peak_bytes", observed->peak_bytes)
        .Num("margin_ppm", policy.observed.margin_ppm)
        .Num("runs", observed->runs)
        .Val("workload", observed->workload)
        .Val("last_observed", observed->last_observed)
        .Val("last_pod", observed->last_pod);
  }

  // The memory limit, the size a patch gives, and the plan annotation that says why (sorted keys).
  const int64_t required = z.required_bytes;
  if (planned) {
    z.limit = CheckLimit(required, f, policy, {t.shm_name, false, static_cast<bool>(t.compose_service)});
    // shm-plan, where the judgment records it: with every finding, or ahead of a denial.
    if (s.ctx.detail == Detail::kAll || !t.patchable || r.mount.kind == ShmMountKind::kOther || z.limit.denial) {
      z.plan_finding = ShmPlanFinding(z.plan, policy.sizing, t.shm_name, f.procs_source,
                                      r.server ? f.server->pointer : t.AnnotationPointer(kNumWorkersAnnotation));
      if (r.server) z.plan_finding->Val("server_terms", ServerTermsText(*r.server));
    }
    z.target_bytes = required;
    if (z.kind == SizingKind::kServer) {
      const ServerLaunch& l = *f.server;
      const std::string read = ServerFlagsText(l);
      z.server_finding = Finding(Check::kSizedFromServerLaunch, l.pointer);
      z.server_finding->Num("required_bytes", required)
          .Num("server_bytes", r.server->bytes)
          .Val("server", std::string(ServerTitle(l.server)))
          .Val("launched_by", l.launched_by)
          .Val("read", read)
          .Val("terms", ServerTermsText(*r.server))
          .Val("unbounded", r.server->unbounded);
      if (!l.unread.empty()) {
        std::string unread;
        for (const auto& flag : l.unread) unread += (unread.empty() ? "" : ", ") + flag;
        z.server_finding->Val("unread", std::move(unread)).Num("gpus", f.gpus);
      }
      if (r.server->unchecked) z.server_finding->Num("unchecked", 1);
      z.plan_json = R"({"gpus":)" + std::to_string(f.gpus) + R"(,"nodes":)" + std::to_string(f.nodes) +
                    observed_member + R"(,"procs":)" + std::to_string(f.procs) + R"(,"required":")" +
                    FormatBytes(required) + R"(","server":")" + std::string(ServerName(l.server)) +
                    R"(","serverBytes":")" + FormatBytes(r.server->bytes) + "\"}";
      return z;
    }
    z.plan_json = R"({"batchBytes":")" + FormatBytes(r.inputs.batch_bytes) + R"(","gpus":)" + std::to_string(f.gpus) +
                  R"(,"nodes":)" + std::to_string(f.nodes) + observed_member + R"(,"prefetchFactor":)" +
                  std::to_string(r.inputs.prefetch_factor) + R"(,"procs":)" + std::to_string(f.procs) +
                  R"(,"required":")" + FormatBytes(required) + R"(","workers":)" + std::to_string(r.inputs.workers) +
                  "}";
    return z;
  }
  z.limit.denial = MemoryLimitDenial(required, f, policy, {t.shm_name, true, false});
  if (z.limit.denial) {
    for (const auto& [name, value] : z.floor_numbers) z.limit.denial->Num(name, value);
  }
  const ShmMount& mount = r.mount;
  const bool own = mount.kind == ShmMountKind::kMemoryEmptyDir;
  z.own_is_enough = own && (!mount.size_limit || *mount.size_limit >= required);
  // What it has is below the floor: a memory emptyDir of its own is raised only to the floor.
  // With a profile, the learned size is the floor and stands in for the estimate.
  z.target_bytes = own         ? std::max(required, mount.size_limit.value_or(0))
                   : z.learned ? required
                               : z.estimate->estimate_bytes;
  z.plan_json = R"({"estimated":)" + JsonQuoted(z.estimate->basis) + R"(,"floor":")" +
                FormatBytes(z.estimate->floor_bytes) + R"(","gpus":)" + std::to_string(f.gpus) + R"(,"nodes":)" +
                std::to_string(f.nodes) + observed_member + R"(,"procs":)" + std::to_string(f.procs) +
                R"(,"required":")" + FormatBytes(z.target_bytes) + "\"}";
  return z;
}

}  // namespace shmguard
