// What is done about one pod template once the /dev/shm it needs is known: the patch that gives
// it that size, with the Pod Security and memory findings that go with it; or, for a kind
// shmguard evaluates but never patches (KubeRay's, a TrainJob), whether what it has will do.
// The last stage of a pod's evaluation (pod_evaluation.cc). Internal to the core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts/pod_facts.h"
#include "core/sizing/pod_sizing.h"
#include "core/sizing/pod_stage.h"
#include "core/values/json_patch.h"

namespace shmguard {

// What a pod is given: `required_bytes` of /dev/shm, what its shmguard.io/plan annotation records
// (`note`, written by PlanAnnotation), and for an unannotated pod the floor the size came from, with its numbers.
// `current`: what the pod has at /dev/shm, in the findings' words (PodEvaluation::current_shm).
struct PatchTarget {
  int64_t required_bytes = 0;
  const PlanNote* note = nullptr;
  int64_t floor_bytes = 0;
  const FloorNumbers* floor_numbers = nullptr;
  std::string_view current;
};

// What RemedyFor decides: the verdict, the findings that say why, in order, and for a patched
// pod its operations and their descriptions; `error` when the patch could not be built (the
// field it names), which denies.
struct Remedy {
  Verdict verdict = Verdict::kOk;
  std::vector<Finding> findings;
  JsonPatch patch;
  std::vector<std::string> changes;
  std::optional<Error> error;
};

// For a kind shmguard patches (`s.t.patchable`), the verdict (kOk when nothing is left to change,
// else kPatch), patch, changes and findings that give `s.t` a /dev/shm of
// `target.required_bytes`, with `target.note` as its shmguard.io/plan annotation:
//   - a Compose service gets shm_size and ulimits.memlock (no Pod Security, no annotations);
//   - a pod gets the volume, mounts and, where the namespace's Pod Security level is
//     privileged, hostIPC and IPC_LOCK per `policy` (else pod-security-limits-patch says why
//     not); a workload that is not a Pod also gets the effective sizing annotations on its pod
//     template, since the controller's own do not reach the pods.
// Each part of the patch comes with its finding (shm-below-need, ipc-lock-missing,
// host-ipc-missing, compose-shm-default, mps-shm); an exempted part is left out, and a patch
// with no part left writes nothing. Notes an existing sizeLimit or shm_size above the memory
// limit.
// For a kind shmguard does not patch: shm-below-need (an error, kDeny) when what it has is below
// the size (an unannotated pod's: its floor) and nothing else will fix it (a TrainJob's pods are
// patched when created, unless /dev/shm is something shmguard never overwrites); else kOk with
// shm-sufficient, or shm-patched-at-creation.
// REQUIRES: `r` was read without errors.
Remedy RemedyFor(const PodStage& s, const PodReading& r, PatchTarget target);

}  // namespace shmguard
