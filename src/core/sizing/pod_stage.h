// What every stage of one pod template's evaluation receives (pod_facts.cc reads it,
// pod_sizing.cc sizes it, pod_evaluation.cc judges it, shm_remedy.cc patches it): the
// template, its workload, the namespace's rule, the policy, and how it is evaluated. Internal
// to the core.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "shmguard/checks/checks.h"
#include "shmguard/plan/shm_profile.h"
#include "shmguard/policy/policy.h"
#include "shmguard/workloads/pod_templates.h"

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
