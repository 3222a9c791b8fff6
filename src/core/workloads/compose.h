// Docker Compose files and `docker run`: a Compose document (top-level `services:`, no
// apiVersion or kind) is read as one pod per service (docs/sources.md §9). Each service becomes a
// one-container pod spec — its GPUs, memory limit, command and environment — so that the facts,
// the plan and the verdict are the same as for a Kubernetes pod; what differs is /dev/shm
// (`shm_size`, `ipc`: FindServiceShm, shm_mount.h) and the patch (`shm_size`, `ulimits.memlock`:
// BuildServicePatch, compose_patch.h).
#pragma once

#include <string>

#include "core/values/docker_bytes.h"
#include "core/values/json_node.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

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

}  // namespace shmguard
