// What a pod template has at /dev/shm today (docs/sources.md §3): the volume its containers
// mount there, what its operator mounts (KubeRay's shared-mem), a Compose service's shm_size or
// ipc; and how to say it to people. Reads only the template and its facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

struct PodFacts;

inline constexpr const char* kShmPath = "/dev/shm";

// True when a container's mountPath is /dev/shm: "/dev/shm" with any trailing slashes
// ("/dev/shm/"), as the container runtime cleans the path. The one test of it the webhook, the
// agent and the kubelet's device checkpoint reader use; the exported CEL matches
// '^/dev/shm/*$', the same rule.
bool IsShmMountPath(std::string_view path);

enum class ShmMountKind {
  kNone,            // nothing at /dev/shm: the container runtime's 64 MiB
  kMemoryEmptyDir,  // an emptyDir {medium: Memory}: shmguard can size it
  kOther,           // hostPath, disk emptyDir, PVC...: reported, never overwritten
};

struct ShmMount {
  ShmMountKind kind = ShmMountKind::kNone;
  std::string volume_name;            // the volume at /dev/shm, or an unmounted memory emptyDir "dshm"
  std::string volume_pointer;         // where that volume is declared, "" when it is not
  std::optional<int64_t> size_limit;  // kMemoryEmptyDir: sizeLimit in bytes when set (> 0)
  std::string description;            // for people: "emptyDir Memory 1Gi", "hostPath /dev/shm"
  bool implicit = false;              // mounted by the workload's operator on its first container, not
                                      // written in the template (KubeRay's shared-mem)
};

// What `t` has at /dev/shm, from the containers' mounts already in `f` (their shm_volume) and
// the declared volumes, whose names it adds to `f.volume_names` (and sets `f.has_volumes`).
// Part of ReadPodFacts. Fails with kInvalidInput naming the pointer when the volumes are not a
// list or a sizeLimit is not a quantity, or when containers mount different volumes there.
Result<ShmMount> ReadShmMount(const PodTemplate& t, PodFacts& f);

// What `t` has at /dev/shm, all told: a Compose service's shm_size or ipc (FindServiceShm);
// else `facts.shm`, or, on a KubeRay pod that mounts nothing there, the emptyDir {medium: Memory}
// KubeRay adds to the Ray container (ray-operator/controllers/ray/common/pod.go), sized to its
// memory limit, else its request, else unbounded. Fails only as FindServiceShm does.
Result<ShmMount> ReadShm(const PodTemplate& t, const PodFacts& facts);

// `mount` for people: its description; with nothing mounted, "64Mi (container default)", "64Mi
// (Docker's default)", the node's or host's /dev/shm under hostIPC / ipc: host (the runtime
// gives the pod the node's only when no mount targets /dev/shm), or "unknown (...)" when the
// template says where its pods' /dev/shm is unknown (t.shm_unknown).
std::string DescribeShm(const ShmMount& mount, const PodTemplate& t, const PodFacts& facts);

// What a service has at /dev/shm: `shm_size` (a memory-backed tmpfs shmguard can size), the
// host's with `ipc: host` (kNone; PodFacts::host_ipc), another service's or container's
// (kOther), none with `ipc: none` (kOther), else Docker's 64 MiB (kNone).
// Fails with kInvalidInput naming the pointer when shm_size is not a byte value.
// REQUIRES: `t` is a Compose template (t.compose_service set).
Result<ShmMount> FindServiceShm(const PodTemplate& t);

}  // namespace shmguard
