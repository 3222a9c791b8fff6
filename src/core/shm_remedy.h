// What is done about one pod template once the /dev/shm it needs is known: the patch that gives
// it that size, with the Pod Security and memory findings that go with it; or, for a kind
// shmguard evaluates but never patches (KubeRay's, a TrainJob), whether what it has will do.
// Also the steps every pod's evaluation shares: recording a finding (and whether it is
// exempted) and settling the verdict. Internal to the evaluation (pod_evaluation.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shmguard/evaluation.h"
#include "shmguard/shm_estimate.h"
#include "shmguard/shm_mount.h"

namespace shmguard {

// How one pod is evaluated: how much is recorded, and which checks are exempted for it (the
// caller's, the rule's, the workload's and the template's shmguard.io/ignore).
struct PodContext {
  Detail detail = Detail::kAll;
  std::vector<Check> exempt;
  const ObservedShm* observed = nullptr;  // the workload's profile, when it has one
  bool Exempt(Check c) const;
};

// One pod template under evaluation: what every step of its evaluation reads (the template, its
// workload, the namespace's rule, the policy, and how it is evaluated).
struct PodStage {
  const PodTemplate& t;
  const Workload& w;
  const NamespaceRule& rule;
  const Policy& policy;
  const PodContext& ctx;
};

// What PatchTo patches a pod to: `required_bytes` of /dev/shm, `plan_json` as its
// shmguard.io/plan annotation, and for an unannotated pod the estimate the size came from.
// `current`: what the pod has at /dev/shm, in the findings' words (PodEvaluation::current_shm).
struct PatchTarget {
  int64_t required_bytes = 0;
  std::string plan_json;
  const ShmEstimate* estimate = nullptr;
  std::string_view current;
};

// What PatchTo or JudgeUnpatched decides for a pod: its verdict, the findings that say why, in
// order, and for a patched pod its operations and their descriptions. Apply records it.
struct Remedy {
  Verdict verdict = Verdict::kOk;
  std::vector<Finding> findings;
  JsonPatch patch;
  std::vector<std::string> changes;
};

// The floor of an estimate, as a finding's numbers: floor_bytes, floor_plan_bytes (NCCL and
// base), minimum_bytes (the policy's), procs, nccl_shm and nccl_proxy (1 when in the floor).
Finding& FloorNumbers(Finding& f, const ShmEstimate& e, const Policy& policy);

// Records `f` for `pe`'s pod.
void Add(PodEvaluation& pe, Finding f);
// Records `findings`, in order, after those already recorded.
void AddAll(PodEvaluation& pe, std::vector<Finding> findings);
// Records a remedy for `pe`'s pod: its findings after those already recorded, its verdict, patch
// and changes.
void Apply(PodEvaluation& pe, Remedy r);
// The verdict the findings leave: kDeny while an error is not suppressed; a pod whose every
// error is exempted is kOk (and, denied, was never patched).
void Settle(PodEvaluation& pe, const PodContext& ctx);

// An input error as a finding: annotation-invalid for a shmguard.io/ annotation, else
// object-invalid pointing at the field the error names.
Finding InputError(const PodTemplate& t, const Error& e);
// Records InputError(t, e) and denies.
void DenyWith(const PodTemplate& t, PodEvaluation& pe, const Error& e);

// The verdict (kOk when nothing is left to change, else kPatch), patch, changes and findings
// that give `s.t` a /dev/shm of `target.required_bytes`, with `target.plan_json` as its
// shmguard.io/plan annotation:
//   - a Compose service gets shm_size and ulimits.memlock (no Pod Security, no annotations);
//   - a pod gets the volume, mounts and, where the namespace's Pod Security level is
//     privileged, hostIPC and IPC_LOCK per `policy` (else pod-security-limits-patch says why
//     not); a workload that is not a Pod also gets the effective sizing annotations on its pod
//     template, since the controller's own do not reach the pods.
// Each part of the patch comes with its finding (shm-below-need, ipc-lock-missing,
// host-ipc-missing, compose-shm-default); an exempted part is left out, and a patch with no part
// left writes nothing. Notes an existing sizeLimit or shm_size above the memory limit.
// `target.estimate`: the floor the size came from, for an unannotated pod. A patch that cannot be
// built is an object-invalid naming the field, and kDeny.
// REQUIRES: `mount` is what `s.t` has at /dev/shm (ReadShm); `s.t.patchable`.
Remedy PatchTo(const PodStage& s, const PodFacts& facts, const ShmMount& mount, PatchTarget target);

// For a kind shmguard does not patch: shm-below-need (an error, kDeny) when `mount` is below
// `required` bytes and nothing else will fix it (a TrainJob's pods are patched when created,
// unless /dev/shm is something shmguard never overwrites); else kOk with shm-sufficient, or
// shm-patched-at-creation. `current`: what it has, in words. `floor`: the floor an unannotated
// pod's size came from (0: a plan).
Remedy JudgeUnpatched(const PodStage& s, const ShmMount& mount, const std::string& current, int64_t required,
                      int64_t floor = 0);

}  // namespace shmguard
