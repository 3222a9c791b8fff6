// Docker Compose files and `docker run`: a Compose document (top-level `services:`, no
// apiVersion or kind) is read as one pod per service (docs/sources.md §9). Each service becomes a
// one-container pod spec — its GPUs, memory limit, command and environment — so that the facts,
// the plan and the verdict are the same as for a Kubernetes pod; what differs is /dev/shm
// (`shm_size`, `ipc`) and the patch (`shm_size`, `ulimits.memlock`).
#pragma once

#include <string>

#include "shmguard/docker_bytes.h"
#include "shmguard/json_node.h"
#include "shmguard/pod_facts.h"
#include "shmguard/pod_templates.h"
#include "shmguard/result.h"
#include "shmguard/shm_patch.h"

namespace shmguard {

// True when `object` is a Compose document: a mapping with a `services` mapping and neither
// apiVersion nor kind.
bool IsComposeDocument(JsonNode object);

// The services of the Compose document `object` into `w` (kind "Compose"): one template per
// service, labelled "service NAME", at "/services/NAME". A service with a malformed field gets
// that error in PodTemplate::error; a document whose `services` is not a mapping fails with
// kInvalidInput.
// REQUIRES: `object` outlives the result.
Result<Workload> ReadCompose(JsonNode object, Workload w);

// What a service has at /dev/shm: `shm_size` (a memory-backed tmpfs shmguard can size), the
// host's with `ipc: host` (kNone; PodFacts::host_ipc), another service's or container's
// (kOther), none with `ipc: none` (kOther), else Docker's 64 MiB (kNone).
// Fails with kInvalidInput naming the pointer when shm_size is not a byte value.
// REQUIRES: `t` is a Compose template (t.compose_service set).
Result<ShmMount> FindServiceShm(const PodTemplate& t);

// The RFC 6902 operations on the Compose document that give the service of `t` a /dev/shm of
// options.required_bytes (`shm_size`, unless it uses the host's) and, where a pod would get
// IPC_LOCK, unlimited locked memory (`ulimits: {memlock: -1}`). No operation when it already
// conforms. Fails with kInvalidInput naming the pointer when `ulimits` is not a mapping.
// REQUIRES: `t` is a Compose template; `mount` from FindServiceShm, not kOther.
Result<PodPatch> BuildServicePatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                                   const PatchOptions& options);

}  // namespace shmguard
