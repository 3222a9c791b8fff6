// What is done about one pod template once the /dev/shm it needs is known: the patch that gives
// it that size, with the Pod Security and memory warnings that go with it; or, for a kind
// shmguard evaluates but never patches (KubeRay's, a TrainJob), whether what it has will do.
// Internal to the evaluation (pod_evaluation.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "shmguard/evaluation.h"

namespace shmguard {

// A deny whose reason is `e`, naming the field.
void DenyWith(PodEvaluation& pe, const Error& e);

// Sets `pe`'s verdict (kOk when nothing is left to change, else kPatch), patch and changes to
// give `t` a /dev/shm of `required` bytes, with `plan_json` as its shmguard.io/plan annotation:
//   - a Compose service gets shm_size and ulimits.memlock (no Pod Security, no annotations);
//   - a pod gets the volume, mounts and, where the namespace's Pod Security level is
//     privileged, hostIPC and IPC_LOCK per `policy` (else a warning says why not); a workload
//     that is not a Pod also gets the effective sizing annotations on its pod template, since
//     the controller's own do not reach the pods.
// Warns when an existing sizeLimit or shm_size exceeds the memory limit. `everything`: describe
// each change (Wording::kEverything). A patch that cannot be built is a kDeny naming the field.
// REQUIRES: `mount` is what `t` has at /dev/shm (ReadShm); `t.patchable`.
void PatchTo(const PodTemplate& t, const Workload& w, const NamespaceRule& rule, const Policy& policy,
             const PodFacts& facts, const ShmMount& mount, int64_t required, std::string plan_json, bool everything,
             PodEvaluation& pe);

// For a kind shmguard does not patch: the reason to deny when `mount` is below `required`
// bytes and nothing else will fix it (a TrainJob's pods are patched when created, unless
// /dev/shm is something shmguard never overwrites); nullopt when it will do.
std::optional<std::string> UnpatchedDenial(const PodTemplate& t, const Workload& w, const ShmMount& mount,
                                           const std::string& current, int64_t required);

// The reason an unpatched kind is fine when UnpatchedDenial gave nullopt: `mount` covers
// `required`, or its pods get what they need when they are created.
std::string UnpatchedCovered(const PodTemplate& t, const Workload& w, const ShmMount& mount, const std::string& current,
                             int64_t required);

}  // namespace shmguard
