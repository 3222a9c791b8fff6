// How much /dev/shm one pod template needs, from what was read of it (PodReading): a sized pod's
// plan, or an unannotated GPU pod's floor and estimate; raised to what its workload was seen to
// use (a ShmProfile); against its memory limit; and the numbers the shmguard.io/plan annotation
// records of it (PlanNote, written with the patch: core/patch/plan_annotation.h). Values only: the evaluation
// (pod_evaluation.cc) decides the verdict from them. Internal to the core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/facts/pod_facts.h"
#include "core/plan/shm_estimate.h"
#include "core/plan/shm_profile.h"
#include "core/servers/server_plan.h"
#include "core/sizing/memory_limit.h"
#include "core/sizing/pod_stage.h"

namespace shmguard {

enum class SizingKind {
  kNone,      // nothing is sized: an input error, an opt-out, or an unannotated pod left alone
  kPlan,      // from DataLoader annotations
  kEstimate,  // an unannotated GPU pod under the policy's `unannotated` rule
  kServer,    // an unannotated pod that launches an inference server: its plan (server_plan.h)
};

// What the shmguard.io/plan annotation records of a size, as numbers: the pod's GPUs, nodes and
// processes, the size a patch gives, and what it was sized from.
struct PlanNote {
  SizingKind kind = SizingKind::kNone;
  int64_t gpus = 0, nodes = 1, procs = 1;
  int64_t required_bytes = 0;                                 // the size a patch gives
  int64_t workers = 0, prefetch_factor = 0, batch_bytes = 0;  // kPlan: the DataLoader's
  Server server = Server::kNone;                              // kServer: the server and its bytes
  int64_t server_bytes = 0;
  std::string estimated;  // kEstimate: the estimate's basis, and the floor
  int64_t floor_bytes = 0;
  const ObservedShm* observed = nullptr;  // the profile the size was learned from, if any
};

struct PodSizing {
  SizingKind kind = SizingKind::kNone;
  std::optional<Error> error;  // the plan or estimate could not be computed
  ShmPlan plan;                // kPlan, kServer: the plan; kEstimate: the floor's plan
  std::optional<ShmEstimate> estimate;
  // kPlan, kServer: shm-plan, when the judgment may record it (every finding is, or the pod may
  // be denied).
  std::optional<Finding> plan_finding;
  std::optional<Finding> server_finding;  // kServer: sized-from-server-launch
  std::optional<Finding> learned;         // sized-from-observation, with a profile
  // kPlan: the plan's size, or what the workload was seen to use when more; kEstimate: the
  // floor, raised the same way.
  int64_t required_bytes = 0;
  // kPlan: CheckLimit of required_bytes; kEstimate: its denial only, with the floor's numbers.
  LimitCheck limit;
  // kEstimate: the memory emptyDir the pod has covers the floor.
  bool own_is_enough = false;
  // The size a patch gives: kPlan required_bytes; kEstimate the floor for a memory emptyDir of
  // its own (or its sizeLimit when larger), else the learned size, else the estimate.
  int64_t target_bytes = 0;
  PlanNote note;               // what the shmguard.io/plan annotation records of target_bytes
  FloorNumbers floor_numbers;  // kEstimate
};

// Sizes `s.t` from `r`. kNone for a template with an error or a shmguard.io/mode, a sized pod
// whose inputs could not be read (r's errors), and an unannotated pod that is not an estimated
// GPU pod (no GPUs, the rule's requireAnnotations, the policy's `leave`, or its /dev/shm
// unreadable).
PodSizing SizePod(const PodStage& s, const PodReading& r);

}  // namespace shmguard
