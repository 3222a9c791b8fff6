// The CEL variables both policies share, in order: the webhook's Pod path, each group beside the
// C++ it mirrors (named in its comments).
#include "core/cel/internal/pod_variables.h"

#include <iterator>
#include <string>

#include "core/cel/internal/cel_text.h"
#include "core/facts/launch_facts.h"
#include "core/facts/shm_mount.h"
#include "core/plan/shm_plan.h"
#include "core/workloads/pod_templates.h"

namespace shmguard::cel {
namespace {

// Container `c`'s GPUs: the policy's GPU resources, limits else requests, in whole units.
std::string GpusOf() {
  return "variables.gpuResources.map(r, "
         "c.?resources.?limits[?r].orValue(c.?resources.?requests[?r].orValue('0'))).filter(q, q != "
         "'0').map(q, " +
         Bytes("q") + ").sum()";
}

// Container `c`'s memory limit in bytes, 0 when it has none.
std::string MemoryOf() {
  return "(c.?resources.?limits[?'memory'].orValue('0') == '0' ? 0 : " + Bytes("c.resources.limits['memory']") + ")";
}

// Processes read from `v`: a whole number in [1, 1024], or the GPUs for 'auto' and 'gpu'; 0 otherwise.
std::string CountOf() {
  return "(v.matches('^[0-9]{1,18}$') && int(v) >= 1 && int(v) <= 1024 ? int(v) : ((v == 'auto' || v == 'gpu') && "
         "variables.gpus > 0 ? variables.gpus : 0))";
}

// Nodes read from `v` ("4", or "1:4", elastic min:max, is 4), at most 10^6; 0 otherwise.
std::string NodesOf() {
  return "(v.substring(v.indexOf(':') + 1).matches('^[0-9]{1,18}$') && int(v.substring(v.indexOf(':') + 1)) >= 1 ? "
         "[int(v.substring(v.indexOf(':') + 1)), 1000000].min() : 0)";
}

// Container `i`'s env selects an RDMA transport (launch_facts.cc RdmaFromEnv). Read only where
// the container sets one of the launch variables: most set none.
std::string RdmaEnv() {
  return "(size(variables.launchEnv[i]) > 0 && ((" + std::string(Env("NCCL_IB_DISABLE")) + " != '1' && (" +
         Env("NCCL_NET") + ".lowerAscii() == 'ib' || " + Env("NCCL_IB_HCA") + " != '')) || !(" +
         Env("NCCL_NET_PLUGIN") + ".lowerAscii() in ['', 'none']) || " + Env("FI_PROVIDER") +
         ".lowerAscii() == 'efa' || " + Env("UCX_NET_DEVICES") + ".contains(':')))";
}

// Container `c` runs as a user other than root (pod_facts.cc ResolveRunAs).
std::string NonRoot() {
  return "(c.?securityContext.?runAsUser.orValue(object.spec.?securityContext.?runAsUser.orValue(0)) > 0 || "
         "c.?securityContext.?runAsNonRoot.orValue(object.spec.?securityContext.?runAsNonRoot.orValue(false)))";
}

// Container `c` has IPC_LOCK already (pod_facts.cc GrantsIpcLock).
std::string GrantsLock() {
  return "(c.?securityContext.?privileged.orValue(false) || "
         "c.?securityContext.?capabilities.?add.orValue([]).exists(k, "
         "k.upperAscii() in ['IPC_LOCK', 'CAP_IPC_LOCK', 'ALL']))";
}

// The containers: their GPUs, launch env and lines, /dev/shm mounts and memory limits
// (pod_facts.cc ReadPodFacts).
CelVariables ContainerVariables() {
  return {
      {"apps", "object.spec.containers"},
      {"inits", "object.spec.?initContainers.orValue([])"},
      // pod_facts.cc ReadResources: GPUs per container (limits, else requests).
      {"appGpus", "variables.apps.map(c, " + GpusOf() + ")"},
      {"launchEnv", "variables.apps.map(c, c.?env.orValue([]).filter(e, has(e.value) && e.name in " +
                        CelList(LaunchEnvNames()) + "))"},
      // Each app container's command and args as one line ('' when it has neither), its first
      // kLaunchSearchBytes searched, as launch_facts.cc FindFlag searches them: a line of any
      // length costs the same bounded find().
      {"launchLines",
       "variables.apps.map(c, has(c.command) || has(c.args) ? (c.?command.orValue([]) + "
       "c.?args.orValue([])).join(' ') : '').map(l, size(l) > " +
           std::to_string(kLaunchSearchBytes) + " ? l.substring(0, " + std::to_string(kLaunchSearchBytes) + ") : l)"},
      {"initGpus", "variables.inits.map(c, " + GpusOf() + ")"},
      {"gpus", "variables.appGpus.sum()"},
      {"requestsGpus", "variables.gpus > 0 || variables.initGpus.exists(g, g > 0)"},
      // Every container, app containers then init containers, and for each its GPUs and whether
      // it mounts something at /dev/shm (pod_facts.cc IsShmPath), read once for what follows.
      {"containers", "variables.apps + variables.inits"},
      {"containerGpus", "variables.appGpus + variables.initGpus"},
      {"mountsShm", "variables.containers.map(c, c.?volumeMounts.orValue([]).exists(m, " + ShmPath() + "))"},
      // The memory limit: the pod's, else the sum of the app containers' and sidecars', at least
      // the largest init container's; -1 when a container has none (pod_facts.cc ReadPodFacts).
      {"memoryLimit", MemoryLimitOf("object")},
  };
}

// The DataLoader and count annotations: what is wrong with them, then their values.
CelVariables AnnotationVariables() {
  return {
      // The DataLoader annotations and the count annotations (pod_facts.cc ReadDataLoader,
      // field_values.cc ReadCountAnnotation): what is wrong with them, then their values.
      {"sized", "'" + std::string(kNumWorkersAnnotation) + "' in variables.anns || '" +
                    std::string(kBatchBytesAnnotation) + "' in variables.anns"},
      {"annotationErrors",
       "[" + CountBad(kNumWorkersAnnotation, 0, kMaxWorkers) + " ? '" + std::string(kNumWorkersAnnotation) +
           " must be a whole number from 0 to " + std::to_string(kMaxWorkers) + "' : '', " +
           CountBad(kPrefetchFactorAnnotation, 1, kMaxPrefetchFactor) + " ? '" +
           std::string(kPrefetchFactorAnnotation) + " must be a whole number from 1 to " +
           std::to_string(kMaxPrefetchFactor) + "' : '', " + CountBad(kProcsPerPodAnnotation, 1, kMaxProcs) + " ? '" +
           std::string(kProcsPerPodAnnotation) + " must be a whole number from 1 to " + std::to_string(kMaxProcs) +
           "' : '', " + CountBad(kNodesAnnotation, 1, kMaxNodes) + " ? '" + std::string(kNodesAnnotation) +
           " must be a whole number from 1 to " + std::to_string(kMaxNodes) +
           "' : '', "
           "'" +
           std::string(kBatchBytesAnnotation) + "' in variables.anns && !('" + std::string(kNumWorkersAnnotation) +
           "' in variables.anns) ? '" + std::string(kNumWorkersAnnotation) + " is required with " +
           std::string(kBatchBytesAnnotation) +
           "' : "
           "'', "
           "'" +
           std::string(kBatchBytesAnnotation) + "' in variables.anns && !(isQuantity(variables.anns['" +
           std::string(kBatchBytesAnnotation) +
           "']) && "
           "!quantity(variables.anns['" +
           std::string(kBatchBytesAnnotation) +
           "']).isLessThan(quantity('0')) && "
           "quantity(variables.anns['" +
           std::string(kBatchBytesAnnotation) + "']).isInteger()) ? '" + std::string(kBatchBytesAnnotation) +
           " must be a quantity of bytes from 0 to 2^63-1, "
           "such as 48Mi' : '', "
           "!('" +
           std::string(kBatchBytesAnnotation) + "' in variables.anns) && variables.anns[?'" +
           std::string(kNumWorkersAnnotation) + "'].orValue('0') != '0' ? '" + std::string(kBatchBytesAnnotation) +
           " is required "
           "when num-workers > 0: the bytes of one collated batch, e.g. 48Mi' : ''"
           "].filter(e, e != '')"},
      {"workers", CountAnnotation(kNumWorkersAnnotation)},
      {"prefetchFactor", "'" + std::string(kPrefetchFactorAnnotation) + "' in variables.anns ? " +
                             CountAnnotation(kPrefetchFactorAnnotation) + " : variables.prefetchDefault"},
      {"batchBytes", "'" + std::string(kBatchBytesAnnotation) + "' in variables.anns && isQuantity(variables.anns['" +
                         std::string(kBatchBytesAnnotation) +
                         "']) && "
                         "quantity(variables.anns['" +
                         std::string(kBatchBytesAnnotation) + "']).isInteger() ? quantity(variables.anns['" +
                         std::string(kBatchBytesAnnotation) + "']).asInteger() : 0"},
  };
}

// The launcher's side: processes, nodes and NCCL's shm transport (launch_facts.cc).
CelVariables LaunchVariables() {
  return {
      // Processes: the annotation, env PET_NPROC_PER_NODE, torchrun's --nproc_per_node, the GPUs
      // (launch_facts.cc ReadLaunchFacts, in that order).
      {"procsFromEnv", "variables.apps.transformList(i, c, " + std::string(Env("PET_NPROC_PER_NODE")) +
                           ").filter(v, v != '').map(v, " + CountOf() + ").filter(n, n > 0)"},
      {"procsFromFlag", "variables.launchLines.filter(l, l != '').map(l, " +
                            Flag("--nproc_per_node|--nproc-per-node", 16) + ").map(v, " + CountOf() +
                            ").filter(n, n > 0)"},
      {"procs",
       CountAnnotation(kProcsPerPodAnnotation) + " > 0 ? " + CountAnnotation(kProcsPerPodAnnotation) +
           " : size(variables.procsFromEnv) > 0 ? variables.procsFromEnv[0] : size(variables.procsFromFlag) > 0 ? "
           "variables.procsFromFlag[0] : variables.gpus > 0 ? [variables.gpus, 1024].min() : 1"},
      // Pods training together: the annotation, env PET_NNODES, torchrun's --nnodes ("1:4" is 4).
      {"nodesFromEnv", "variables.apps.transformList(i, c, " + std::string(Env("PET_NNODES")) +
                           ").filter(v, v != '').map(v, " + NodesOf() + ").filter(n, n > 0)"},
      {"nodesFromFlag", "variables.launchLines.filter(l, l != '').map(l, " + Flag("--nnodes", 8) + ").map(v, " +
                            NodesOf() + ").filter(n, n > 0)"},
      {"nodes",
       CountAnnotation(kNodesAnnotation) + " > 0 ? " + CountAnnotation(kNodesAnnotation) +
           " : size(variables.nodesFromEnv) > 0 ? variables.nodesFromEnv[0] : size(variables.nodesFromFlag) > 0 ? "
           "variables.nodesFromFlag[0] : 1"},
      // NCCL's shm transport, off when a GPU container sets NCCL_SHM_DISABLE=1.
      {"ncclShm", "!variables.apps.exists(i, c, (!variables.requestsGpus || variables.appGpus[i] > 0) && " +
                      std::string(Env("NCCL_SHM_DISABLE")) + " == '1')"},
  };
}

// The plan and the estimate's floor and share of the memory limit (shm_plan.cc, shm_estimate.cc).
CelVariables PlanVariables() {
  return {
      // The plan (shm_plan.cc PlanShm) and the floor of the estimate (shm_estimate.cc).
      {"ncclBytes",
       "(variables.procs >= 2 && variables.ncclShm ? variables.procs * 2 * (variables.procs == 2 ? 1 : 2) * "
       "variables.ncclConnectionBytes : 0) + "
       "(variables.nodes > 1 ? variables.procs * variables.ncclProxyBytes : 0)"},
      {"dataLoaderBytes",
       "variables.workers > 0 ? variables.procs * (variables.workers * variables.prefetchFactor + "
       "variables.inFlightExtra) * "
       "variables.batchBytes : 0"},
      {"planBytes", "[" + Safe("variables.dataLoaderBytes + variables.ncclBytes + variables.baseBytes") +
                        ", variables.procs >= 2 ? variables.multiGpuFloorBytes : 0].max()"},
      {"floorBytes", "[" + Safe("variables.ncclBytes + variables.baseBytes") +
                         ", variables.procs >= 2 ? variables.multiGpuFloorBytes : 0, variables.minimumBytes].max()"},
      // The unannotated share of the limit, down to a whole MiB, and the most
      // maxFractionOfMemoryLimit allows (shm_estimate.cc ShareOf, Cap).
      {"limitShare", Share("variables.memoryLimit", "variables.fractionPpm") + " / 1048576 * 1048576"},
      {"limitCap", Share("variables.memoryLimit", "variables.maxFractionPpm")},
      {"estimateBytes",
       "variables.unannotatedFloor || variables.memoryLimit < 0 || variables.limitShare <= variables.floorBytes ? "
       "variables.floorBytes : variables.limitShare > variables.limitCap ? [variables.floorBytes, "
       "variables.limitCap].max() : variables.limitShare"},
  };
}

// What the pod has at /dev/shm (shm_mount.cc ReadShmMount).
CelVariables MountVariables() {
  return {
      // What the pod has at /dev/shm (shm_mount.cc ReadShmMount): the volume its containers mount
      // there, else an unmounted memory emptyDir named dshm; 0 none, 1 a memory emptyDir, 2 another.
      {"shmNames", "variables.containers.map(c, c.?volumeMounts.orValue([]).filter(m, " + ShmPath() +
                       ").map(m, m.name)).filter(l, size(l) > 0).map(l, l[0])"},
      {"shmMountError", "size(variables.shmNames) > 0 && !variables.shmNames.all(n, n == variables.shmNames[0])"},
      {"volumes", "object.spec.?volumes.orValue([])"},
      {"wanted", "size(variables.shmNames) > 0 ? variables.shmNames[0] : '" + std::string(kShmVolumeName) + "'"},
      {"volumeIndex", "(variables.volumes.transformList(i, v, v.name == variables.wanted, i) + [-1])[0]"},
      {"mountKind",
       "variables.volumeIndex < 0 ? (size(variables.shmNames) == 0 ? 0 : 2) : "
       "variables.volumes[variables.volumeIndex].?emptyDir.?medium.orValue('') == 'Memory' ? 1 : "
       "size(variables.shmNames) == 0 ? 0 : 2"},
      {"sizeLimit",
       "variables.mountKind == 1 && variables.volumes[variables.volumeIndex].emptyDir.?sizeLimit.hasValue() ? " +
           Bytes("variables.volumes[variables.volumeIndex].emptyDir.sizeLimit") + " : 0"},
      {"volumeName",
       "variables.mountKind != 0 || variables.volumeIndex < 0 ? variables.wanted : variables.volumeNames.filter(n, "
       "!variables.volumes.exists(v, v.name == n))[0]"},
      {"gpuContainersMount", "variables.containerGpus.all(i, g, g == 0 || variables.mountsShm[i])"},
      {"mps",
       "variables.containers.exists(i, c, variables.containerGpus[i] > 0 && variables.mpsResources.exists(r, "
       "c.?resources.?limits[?r].hasValue() || c.?resources.?requests[?r].hasValue()))"},
      {"hostIPC", "object.spec.?hostIPC.orValue(false)"},
  };
}

// What the pod is to get at /dev/shm, and the webhook's denials of it in words.
CelVariables VerdictVariables() {
  return {
      // What the pod is to get at /dev/shm, -1 for nothing (pod_evaluation.cc JudgeSized and
      // JudgeEstimated, memory_limit.cc MemoryLimitDenial), and why not when it is denied.
      {"neededBytes", "variables.sized ? variables.planBytes : variables.floorBytes"},
      {"overLimit",
       "variables.memoryLimit >= 0 && (variables.neededBytes > variables.memoryLimit || variables.neededBytes > "
       "variables.limitCap)"},
      {"estimated",
       "!variables.sized && variables.requestsGpus && !variables.requireAnnotations && !variables.unannotatedLeave && "
       "!variables.shmMountError && size(variables.annotationErrors) == 0"},
      // What the webhook would deny (its errors), in words for the validating policies.
      {"problems",
       "variables.annotationErrors + (variables.requireAnnotations && !variables.sized && variables.requestsGpus ? "
       "['this namespace requires shmguard.io/num-workers and shmguard.io/batch-bytes on GPU pods "
       "(docs/checks.md#annotations-required)'] : []) + (variables.shmMountError ? ['containers mount different "
       "volumes at /dev/shm; all processes of a pod must share one /dev/shm'] : []) + (variables.overLimit && "
       "size(variables.annotationErrors) == 0 && (variables.sized || variables.estimated) ? ['/dev/shm needs ' + "
       "string(variables.neededBytes) + ' bytes, more than the memory limit (' + string(variables.memoryLimit) + ' "
       "bytes) allows'] : []) + (variables.sized && variables.mountKind == 2 ? ['/dev/shm is not a memory-backed "
       "emptyDir; DataLoader batches need one'] : [])"},
      {"targetBytes",
       "size(variables.annotationErrors) > 0 || variables.shmMountError || variables.overLimit || variables.mountKind "
       "== 2 ? -1 : "
       "variables.sized ? variables.planBytes : !variables.estimated ? -1 : "
       "variables.mountKind == 0 && variables.hostIPC ? -1 : "
       "variables.mountKind == 1 && (variables.sizeLimit == 0 || variables.sizeLimit >= variables.floorBytes) && "
       "variables.gpuContainersMount ? -1 : "
       "variables.mountKind == 1 ? [variables.floorBytes, variables.sizeLimit].max() : variables.estimateBytes"},
      // That size as FormatBytes writes it (quantity.cc): a power-of-1024 suffix when it divides,
      // else the decimal suffixes of a canonical DecimalSI quantity.
      {"targetText", "variables.targetBytes <= 0 ? '0' : " + QuantityText("variables.targetBytes")},
  };
}

// The parts of the patch (shm_remedy.cc PatchTo, shm_patch.cc BuildPodPatch).
CelVariables PatchVariables() {
  return {
      // The parts of the patch (shm_remedy.cc PatchTo, shm_patch.cc BuildPodPatch).
      {"shmParts", "variables.targetBytes >= 0 && !variables.mps && !('shm-below-need' in variables.exempt)"},
      {"raise",
       "variables.shmParts && variables.mountKind == 1 && variables.sizeLimit != 0 && variables.sizeLimit < "
       "variables.targetBytes"},
      // Per container (app containers, then init containers): a /dev/shm mount to add.
      {"mountIn",
       "variables.containers.transformList(i, c, variables.shmParts && !variables.mountsShm[i] && (i < "
       "size(variables.apps) || "
       "variables.initMountsAll || (variables.initMountsGpu && variables.containerGpus[i] > 0)))"},
      // Whether the mode wants IPC_LOCK in the container (for auto: a root GPU container that
      // registers host memory for RDMA) is asked first, as most containers are not such.
      {"lockIn",
       "variables.apps.transformList(i, c, (variables.ipcLockMode == 2 || (variables.appGpus[i] > 0 && "
       "(variables.ipcLockMode == 1 || (variables.ipcLockMode == 0 && "
       "(c.?resources.?limits.orValue({}).exists(k, k.matches(variables.rdmaRegex)) || "
       "c.?resources.?requests.orValue({}).exists(k, k.matches(variables.rdmaRegex)) || " +
           RdmaEnv() + ") && !" + NonRoot() +
           ")))) && variables.targetBytes >= 0 && variables.privileged && !('ipc-lock-missing' in variables.exempt) "
           "&& !" +
           GrantsLock() + ")"},
      {"setHostIPC",
       "variables.targetBytes >= 0 && variables.hostIpcAlways && variables.privileged && !variables.hostIPC && "
       "!('host-ipc-missing' in variables.exempt)"},
      {"changes",
       "(variables.shmParts && variables.mountKind == 0) || variables.raise || "
       "variables.mountIn.exists(m, m) || variables.lockIn.exists(l, l) || variables.setHostIPC"},
  };
}

}  // namespace

std::string MemoryLimitOf(const std::string& root) {
  const std::string inits = root + ".spec.?initContainers.orValue([])";
  const std::string sidecar = "c.?restartPolicy.orValue('') == 'Always'";
  return root + ".spec.?resources.?limits[?'memory'].hasValue() ? " + Bytes(root + ".spec.resources.limits['memory']") +
         " : (" + root + ".spec.containers + " + inits + ").exists(c, " + MemoryOf() + " <= 0) ? -1 : [(" + root +
         ".spec.containers.map(c, " + MemoryOf() + ") + " + inits + ".filter(c, " + sidecar + ").map(c, " + MemoryOf() +
         ") + [0]).sum(), (" + inits + ".filter(c, !(" + sidecar + ")).map(c, " + MemoryOf() + ") + [0]).max()].max()";
}

CelVariables NamespaceVariables() {
  return {
      // The namespace rule (policy.cc MatchNamespace), first: the policy's values that differ by
      // rule read it; the last entry is the {mode: warn} a namespace matching no rule gets.
      {"rule",
       "(variables.ruleRegexes.transformList(i, r, request.namespace.matches(r), i) + "
       "[size(variables.ruleRegexes)])[0]"},
      {"podSecurity",
       "[variables.ruleLevel, {'baseline': 1, 'restricted': "
       "2}[?namespaceObject.metadata.?labels[?variables.podSecurityLabel].orValue('')].orValue(0)].max()"},
      {"privileged", "variables.podSecurity == 0"},
      {"ipcLockMode", "variables.ruleLock"},
      {"hostIpcAlways", "variables.ruleHostIpc"},
      {"requireAnnotations", "variables.ruleRequire"},
      {"enforce",
       "variables.ruleEnforce || namespaceObject.metadata.?labels[?variables.enforceLabel].orValue('') == 'true'"},
      {"anns", "object.metadata.?annotations.orValue({})"},
      {"exempt",
       "variables.ruleIgnore + ('shmguard.io/ignore' in variables.anns ? "
       "variables.anns['shmguard.io/ignore'].split(',').map(s, s.trim()) : [])"},
  };
}

CelVariables PodVariables() {
  CelVariables out;
  for (auto group : {NamespaceVariables, ContainerVariables, AnnotationVariables, LaunchVariables, PlanVariables,
                     MountVariables, VerdictVariables, PatchVariables}) {
    CelVariables part = group();
    out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

}  // namespace shmguard::cel
