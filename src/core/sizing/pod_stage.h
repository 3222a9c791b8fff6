// What every stage of one pod template's evaluation after its reading receives (SizePod sizes
// it, verdict's EvaluatePod judges it, patch's RemedyFor patches it; ReadPod, a floor below, is
// handed the template and the policy alone): the template, its workload, the namespace's rule,
// the policy, and how it is evaluated. The pipeline's contract, a public face of the sizing room.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/checks/checks.h"
#include "core/plan/shm_profile.h"
#include "core/policy/policy.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

// How one pod is evaluated: how much is recorded, and which checks are exempted for it (the
// caller's, the rule's, the workload's and the template's shmguard.io/ignore).
struct PodContext {
  Detail detail = Detail::kAll;
  std::vector<Check> exempt;
  const ObservedShm* observed = nullptr;  // the workload's profile, when it has one
  bool Exempt(Check c) const { return std::find(exempt.begin(), exempt.end(), c) != exempt.end(); }
};

struct PodStage {
  const PodTemplate& t;
  const Workload& w;
  const NamespaceRule& rule;
  const Policy& policy;
  const PodContext& ctx;
};

// The numbers a finding carries about an estimate's floor: floor_bytes, floor_plan_bytes (NCCL
// and base), minimum_bytes (the policy's), procs, nccl_shm and nccl_proxy (1 when in the floor).
using FloorNumbers = std::vector<std::pair<std::string_view, int64_t>>;

}  // namespace shmguard
