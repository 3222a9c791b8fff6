// Docker Compose files and `docker run`: a Compose document (top-level `services:`, no
// apiVersion or kind) is read as one pod per service (docs/sources.md §9). Each service becomes a
// one-container pod spec — its GPUs, memory limit, command and environment — so that the facts,
// the plan and the verdict are the same as for a Kubernetes pod; what differs is /dev/shm
// (`shm_size`, `ipc`) and the patch (`shm_size`, `ulimits.memlock`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shmguard/json_node.h"
#include "shmguard/pod_facts.h"
#include "shmguard/pod_templates.h"
#include "shmguard/result.h"
#include "shmguard/shm_patch.h"

namespace shmguard {

// Docker's default /dev/shm (docker run --shm-size; Compose shm_size): 64 MiB.
inline constexpr int64_t kDockerDefaultShmBytes = 64 * 1024 * 1024;

// True when `object` is a Compose document: a mapping with a `services` mapping and neither
// apiVersion nor kind.
bool IsComposeDocument(JsonNode object);

// A byte value as Docker and Compose read it (go-units RAMInBytes): decimal digits with optional
// ".digits" groups, an optional single space, an optional unit k, m, g, t or p (binary: 1024^n),
// an optional "i" and an optional "b", case-insensitive; the amount is read as a float, multiplied
// and truncated: "2gb" and "2GiB" are 2 GiB, "1.5g" is 1.5 GiB, "10" is 10 bytes. Fails with
// kInvalidInput naming `where` for anything else ("2 gigs", "-1g", "1.2.3g", "") and for values
// above 2^63-1 bytes.
Result<int64_t> ParseDockerBytes(std::string_view text, std::string_view where);

// A Compose byte field: an integer (bytes, not negative) or a string for ParseDockerBytes.
// Fails with kInvalidInput naming `pointer` otherwise.
Result<int64_t> ReadComposeBytes(JsonNode value, const std::string& pointer);

// `bytes` as Compose and `docker run --shm-size` read it back to the same count: the largest of
// p, t, g, m, k that divides it ("16g", "1536m"), else the plain number of bytes ("1000").
// REQUIRES: bytes >= 0.
std::string FormatDockerBytes(int64_t bytes);

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
