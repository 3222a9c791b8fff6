// Facts about one pod template that the plan needs: GPU count, memory limit, processes per pod
// and nodes, each with the place it came from so reasons can say why (docs/sources.md §2); and
// everything one pod's evaluation reads of its template (ReadPod).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts/shm_mount.h"
#include "core/plan/shm_plan.h"
#include "core/policy/policy.h"
#include "core/servers/server_plan.h"
#include "core/values/field_values.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

// Where a container's securityContext stands on IPC_LOCK, and so which field a patch adds.
enum class IpcLock {
  kGranted,            // privileged, or capabilities.add has IPC_LOCK, CAP_IPC_LOCK or ALL
  kNoSecurityContext,  // no securityContext
  kNoCapabilities,     // a securityContext without capabilities
  kNoAddList,          // capabilities without add
  kNotAdded,           // an add list without it
};

// Whom a container runs as, as far as the spec says: the image's USER cannot be seen at
// admission.
enum class RunAs {
  kRoot,     // runAsUser: 0 (the container's, else the pod's)
  kUnknown,  // no runAsUser and no runAsNonRoot: true: the image's user, root unless it sets one
  kNonRoot,  // runAsUser above 0, or runAsNonRoot: true
};

struct ContainerFacts {
  std::string name;
  std::string pointer;   // "/spec/containers/0"
  bool init = false;     // listed under initContainers
  bool sidecar = false;  // an init container with restartPolicy: Always
  int64_t gpus = 0;      // sum of the policy's GPU resources, limits else requests
  // resources.limits.memory; requests.memory only for the first container of a KubeRay pod
  // (the Ray container, whose shared-mem KubeRay sizes to it).
  std::optional<int64_t> memory_limit, memory_request;
  bool has_volume_mounts = false;                  // a volumeMounts list is written (maybe empty)
  bool mounts_shm = false;                         // something is mounted at /dev/shm (trailing slashes ignored)
  bool shm_read_only = false;                      // that mount says readOnly: true
  std::optional<std::string> shm_volume;           // the name of that volume, when it has one
  IpcLock ipc_lock = IpcLock::kNoSecurityContext;  // app containers only
  RunAs run_as = RunAs::kUnknown;
  // For people: "runAsUser 0", "runAsUser 1000 (pod)", "runAsNonRoot: true", "runAsUser unset".
  std::string run_as_source;
  // Why it registers host memory for RDMA: "requests rdma/hca_shared_devices_a" (a resource of
  // the policy's rdmaResources), "env NCCL_NET=IB" (launch_facts.cc); "" when nothing says so.
  std::string rdma;
  // A resource of the policy's mpsResources it requests ("" none): its /dev/shm is the MPS daemon's.
  std::string mps_resource;
};

struct PodFacts {
  std::vector<ContainerFacts> containers;  // app containers first, then init containers
  int64_t gpus = 0;                        // over app containers (docs/sources.md §2)
  // The first MPS resource a container requests, and that container: the device plugin mounts
  // the MPS daemon's tmpfs at its /dev/shm. "" when none.
  std::string mps_resource, mps_container, mps_pointer;  // mps_pointer: that container's resources
  bool requests_gpus = false;                            // some container or init container requests a GPU
  // Pod-level spec.resources.limits.memory, else max(sum of app + sidecar limits, largest init
  // limit); nullopt when some container has no memory limit (then the cgroup has none either).
  std::optional<int64_t> memory_limit_bytes;
  std::string memory_limit_source;  // "pod-level limit", "sum of container limits" or why unknown
  // The field a memory finding points at: the pod-level limit, the first app container's limit,
  // or the memory limit a container lacks (a pointer to a missing field; its parent is shown).
  std::string memory_limit_pointer;
  // spec.hostIPC (a Compose service's ipc: host): the pod uses the node's /dev/shm unless it
  // mounts one of its own.
  bool host_ipc = false;
  bool host_ipc_written = false;  // the spec has a hostIPC field
  // The volumes: what is at /dev/shm (a memory emptyDir "dshm" counts even unmounted), whether
  // the spec has a volumes list, and every name taken, the shared volumes' included.
  ShmMount shm;
  bool has_volumes = false;
  std::vector<std::string_view> volume_names;  // views into the object, in its order
  int64_t procs = 1;                           // training processes per pod, >= 1
  std::string procs_source;                    // e.g. "annotation shmguard.io/procs-per-pod", "4 GPUs"
  // The processes were stated (an annotation, the kind's field, env, a torchrun flag), not taken
  // from the GPU count; `procs_pointer` is where (a findings' place).
  bool procs_stated = false;
  std::string procs_pointer;
  int64_t nodes = 1;  // pods of the job, >= 1; > 1 means multi-node NCCL
  std::string nodes_source;
  // NCCL settings the GPU containers state in their env (NCCL's env.rst): NCCL_SHM_DISABLE=1
  // turns its shared-memory transport off; NCCL_P2P_DISABLE=1 sends intra-node traffic through
  // it instead of GPU peer-to-peer. The source names the container: "container \"trainer\"".
  bool nccl_shm_disabled = false;
  std::string nccl_shm_disabled_source;
  bool nccl_p2p_disabled = false;
  std::string nccl_p2p_disabled_source;
  // The inference server the first app container that launches one launches (server_plan.h),
  // and those the other app containers launch: every one of them takes the pod's /dev/shm.
  std::optional<ServerLaunch> server;
  std::vector<ServerLaunch> more_servers;
  // The resource claims whose devices the input does not hold (a ResourceClaimTemplate not
  // given to the audit), in words: the pod's GPUs through them are unknown. When the launch
  // states its processes (torchrun, PET_NPROC_PER_NODE, an annotation) or a server, the pod is
  // sized as a GPU pod of that many GPUs.
  std::string claims_unknown;
  // A container whose launch expands past what shmguard reads (server_plan.h): where, and why.
  // The pod is then sized as if it launched no server.
  std::optional<Error> launch_unread;
};

// Reads the facts of `t`: each container once, then the volumes. NCCL settings are read from the containers that
// request GPUs (from every container when none does). Processes per pod: annotation shmguard.io/procs-per-pod, else env
// PET_NPROC_PER_NODE, else --nproc_per_node/--nproc-per-node in command/args, else the GPU
// count, else 1 ("auto"/"gpu" mean the GPU count). Nodes: annotation shmguard.io/nodes, else the
// workload's shape (pods_together), else PET_NNODES, else --nnodes, else 1.
// Fails with kInvalidInput naming the field pointer when a GPU or memory quantity, the
// containers list or an annotation is malformed ("nvidia.com/gpu: $GPU_PER_NODE"), when
// volumes, mounts or a securityContext have the wrong shape, or when containers mount different
// volumes at /dev/shm (NCCL needs every rank of a pod on the same /dev/shm).
Result<PodFacts> ReadPodFacts(const PodTemplate& t, const Policy& policy);

// The pod's side of the plan's inputs: processes, nodes and NCCL settings of `facts`; no
// DataLoader (workers 0), which the caller adds when it knows it.
ShmInputs PodShmInputs(const PodFacts& facts);

// Everything one pod template's evaluation reads of it, read once: whether it is sized from
// DataLoader annotations (shmguard.io/num-workers or batch-bytes) and what they say, its facts
// and the plan's inputs from them, what it has at /dev/shm (ReadShm) and that in words. A part
// that could not be read is its error; what depends on it is left as it is by default.
// What a container has at /dev/shm when nothing is mounted there: containerd's and Docker's
// 64 MiB (containerd pkg/oci spec's defaultShmSize; Docker's --shm-size default).
inline constexpr int64_t kContainerDefaultShmBytes = int64_t{64} << 20;

struct PodReading {
  bool sized = false;
  std::optional<Error> sizing_error;  // a sized pod's malformed or missing DataLoader annotation
  PodFacts facts;
  std::optional<Error> facts_error;
  // PodShmInputs(facts) with the DataLoader's workers, prefetch factor (the policy's when not
  // annotated) and batch bytes; workers 0 for an unannotated pod.
  ShmInputs inputs;
  ShmMount mount;
  std::optional<Error> mount_error;  // the facts' error when they could not be read
  std::string current;               // DescribeShm(mount), else t.default_shm
  // What `current` is in bytes: the container runtime's 64 MiB, a memory emptyDir's sizeLimit,
  // or for one without sizeLimit the memory limit the kubelet sizes it at; nullopt where no
  // number applies (the node's /dev/shm through hostIPC, another kind of volume, an unbounded
  // volume in a pod without a memory limit, a mount that could not be read).
  std::optional<int64_t> current_bytes = kContainerDefaultShmBytes;
  // An unannotated pod's server (facts.server), planned; its processes and nodes are in facts
  // and its segments in inputs.server_bytes.
  std::optional<ServerPlan> server;
};

// Reads `t` under `policy` (ReadPodFacts, ReadShm, DescribeShm, and the DataLoader annotations:
// num-workers and batch-bytes are each required with the other, batch-bytes a quoted byte
// quantity, counts quoted integers in range).
PodReading ReadPod(const PodTemplate& t, const Policy& policy);

// What a server's plan says of a pod's counts: its ranks are the pod's processes unless something
// stated them (an annotation, env, a launcher's flag, `plan --procs`), and ranks that span pods
// make at least two nodes (the launch's own count when it says). One rule for the webhook's
// reading and `shmguard plan --server`.
void TakeServerCounts(PodFacts& f, const ServerLaunch& l, const ServerPlan& plan);

}  // namespace shmguard
