// A Compose service's patch: where a pod gets a dshm volume and IPC_LOCK, a service gets
// `shm_size` and unlimited locked memory (docs/sources.md §9).
#pragma once

#include "core/facts/pod_facts.h"
#include "core/facts/shm_mount.h"
#include "core/patch/shm_patch.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

// The RFC 6902 operations on the Compose document that give the service of `t` a /dev/shm of
// options.required_bytes (`shm_size`, unless it uses the host's) and, where a pod would get
// IPC_LOCK, unlimited locked memory (`ulimits: {memlock: -1}`). No operation when it already
// conforms. Fails with kInvalidInput naming the pointer when `ulimits` is not a mapping.
// REQUIRES: `t` is a Compose template; `mount` from FindServiceShm, not kOther.
Result<PodPatch> BuildServicePatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                                   const PatchOptions& options);

}  // namespace shmguard
