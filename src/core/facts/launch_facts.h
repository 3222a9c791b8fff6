// The launcher's side of a pod (ReadPodFacts' second half): training processes per pod, pods
// training together, and the NCCL settings that change /dev/shm. Internal to the core.
#pragma once

#include <string>
#include <vector>

#include "core/facts/pod_facts.h"
#include "core/values/json_node.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

// How much of a container's command and args, joined with spaces, is searched for torchrun's
// flags (--nproc_per_node, --nnodes): the first 16 KiB, here and in policy mode's CEL alike, so
// that the two modes agree and a command line of any length costs CEL the same bounded search.
inline constexpr size_t kLaunchSearchBytes = 16384;

// Fills f.procs and f.nodes with their sources, and the NCCL settings, in the order of
// docs/sources.md §2: processes from the shmguard.io/procs-per-pod annotation, the kind's own
// field (t.procs_field), PET_NPROC_PER_NODE, --nproc_per_node, else the GPUs; nodes from the
// shmguard.io/nodes annotation, the kind's pod count (t.pods_together), PET_NNODES, --nnodes.
// Env and flags are read from the app containers, as far as the first that gives each;
// NCCL_SHM_DISABLE and NCCL_P2P_DISABLE from the GPU containers (all app containers when none
// requests a GPU). Fails with kInvalidInput naming the annotation when either annotation is not
// a whole number in range.
// REQUIRES: `container_nodes[i]` is the node of f.containers[i]; f.gpus and f.requests_gpus are read.
Result<bool> ReadLaunchFacts(const PodTemplate& t, const std::vector<JsonNode>& container_nodes, PodFacts& f);

// The names of the env variables ReadLaunchFacts reads, in its table's order.
std::vector<std::string> LaunchEnvNames();

}  // namespace shmguard
