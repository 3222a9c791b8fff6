// ExportAdmissionPolicies: the webhook's Pod path (pod_facts.cc, launch_facts.cc, shm_plan.cc,
// shm_estimate.cc, memory_limit.cc, shm_mount.cc, shm_patch.cc, shm_remedy.cc) as CEL variables
// that the mutating and the validating policies share. Each variable names the C++ it mirrors;
// docs/policy-mode.md lists what is left out.
#include "shmguard/cel/admission_policy.h"

#include <algorithm>
#include <string_view>

#include "core/facts/launch_facts.h"
#include "shmguard/checks/checks.h"
#include "shmguard/facts/shm_mount.h"
#include "shmguard/plan/shm_plan.h"
#include "shmguard/values/glob.h"
#include "shmguard/workloads/pod_templates.h"

namespace shmguard {
namespace {

using nlohmann::json;

// A CEL string literal holding `s` exactly: quotes and backslashes escaped, and every byte that
// is not printable ASCII as \xHH, so no value can end the literal or hold a raw newline.
std::string CelString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (b < 0x20 || b >= 0x7F) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string CelList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ", " : "") + CelString(s);
  return out + "]";
}

std::string CelBool(bool b) { return b ? "true" : "false"; }

std::string CelInt(int64_t n) { return std::to_string(n); }

// A list of CEL expressions.
std::string CelArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ", " : "") + s;
  return out + "]";
}

// One anchored alternation of `globs` as RE2 ("" when there are none); an error naming the glob
// that GlobRegex refuses.
Result<std::string> RegexOf(const std::vector<std::string>& globs) {
  std::string out;
  for (const auto& g : globs) {
    auto r = GlobRegex(g);
    if (!r) return r.error();
    out += (out.empty() ? "" : "|") + r->substr(1, r->size() - 2);
  }
  return out.empty() ? std::string() : "^(?:" + out + ")$";
}

// A quantity field as whole bytes, rounded up as the webhook's ReadQuantityField rounds.
// (Parsing it again costs less CEL than binding it in a one-item list.)
std::string Bytes(const std::string& field) {
  const std::string q = "quantity(string(" + field + "))";
  return "(" + q + ".isInteger() ? " + q + ".asInteger() : int(" + q + ".asApproximateFloat()) + 1)";
}

// The first string value of env NAME in app container `i` ('' when none), as ReadLaunchEnv reads
// it; NAME is one of LaunchEnvNames(), the only variables variables.launchEnv keeps of each app
// container's env, so that each lookup goes over a few entries at most.
std::string Env(const char* name) {
  return std::string("(size(variables.launchEnv[i]) == 0 ? '' : (variables.launchEnv[i].filter(e, e.name == '") + name +
         "').map(e, e.value) + [''])[0])";
}

// The value of `--flag=V` or `--flag V` in launch line `l` (a container's command and args,
// variables.launchLines), unquoted; '' when absent (launch_facts.cc FindFlag). `flags` are
// alternatives of the same length.
std::string Flag(const std::string& alternatives, size_t length) {
  return "[l.find('(^|\\\\s)(" + alternatives + ")(=\\\\S*|\\\\s+\\\\S+)').trim()].map(m, m == '' ? '' : m.substring(" +
         std::to_string(length) +
         ").trim()).map(v, (v.startsWith('=') ? v.substring(1) : v).replace('\"', '').replace(\"'\", ''))[0]";
}

// A count annotation's check: present and not a whole number within [min, max].
std::string CountBad(const char* key, int64_t min, int64_t max) {
  const std::string a = std::string("variables.anns['") + key + "']";
  return std::string("('") + key + "' in variables.anns && !(" + a + ".matches('^[0-9]{1,18}$') && int(" + a +
         ") >= " + std::to_string(min) + " && int(" + a + ") <= " + std::to_string(max) + "))";
}

// A count annotation's value, 0 when it is absent or not a whole number (field_values.cc
// ReadCountAnnotation).
std::string CountAnnotation(const char* key) {
  const std::string a = std::string("variables.anns[?'") + key + "'].orValue('0')";
  return "(" + a + ".matches('^[0-9]{1,18}$') ? int(" + a + ") : 0)";
}

// sum × safety rounded up, then up to a whole MiB (shm_plan.cc WithSafety), in int64 without
// overflow: sum = q×10^6 + r, so ⌈sum×s/10^6⌉ = q×s + ⌈r×s/10^6⌉.
std::string Safe(const std::string& sum) {
  return "(((" + sum + ") / 1000000 * variables.safetyPpm + ((" + sum +
         ") % 1000000 * variables.safetyPpm + 999999) / 1000000 + 1048575) / 1048576 * 1048576)";
}

// ⌊limit × ppm / 10^6⌋ without overflow (memory_limit.cc, shm_estimate.cc Cap).
std::string Share(const std::string& limit, const std::string& ppm) {
  return "((" + limit + ") / 1000000 * " + ppm + " + (" + limit + ") % 1000000 * " + ppm + " / 1000000)";
}

// A positive byte count as the canonical quantity FormatBytes prints (quantity.cc
// FormatQuantity): the largest power-of-1024 suffix that divides it, else DecimalSI's.
std::string QuantityText(const std::string& n) {
  const std::pair<const char*, const char*> units[] = {
      {"1152921504606846976", "Ei"}, {"1125899906842624", "Pi"}, {"1099511627776", "Ti"},
      {"1073741824", "Gi"},          {"1048576", "Mi"},          {"1024", "Ki"},
      {"1000000000000000000", "E"},  {"1000000000000000", "P"},  {"1000000000000", "T"},
      {"1000000000", "G"},           {"1000000", "M"},           {"1000", "k"}};
  std::string out;
  for (const auto& [unit, suffix] : units) {
    out += n + " % " + unit + " == 0 ? string(" + n + " / " + unit + ") + '" + suffix + "' : ";
  }
  return "(" + out + "string(" + n + "))";
}

// The variables both policies read, in order (a variable reads only those before it).
std::vector<std::pair<std::string, std::string>> Variables() {
  const std::string gpus_of =
      "variables.gpuResources.map(r, "
      "c.?resources.?limits[?r].orValue(c.?resources.?requests[?r].orValue('0'))).filter(q, q != "
      "'0').map(q, " +
      Bytes("q") + ").sum()";
  const std::string memory_of =
      "(c.?resources.?limits[?'memory'].orValue('0') == '0' ? 0 : " + Bytes("c.resources.limits['memory']") + ")";
  const std::string count =
      "(v.matches('^[0-9]{1,18}$') && int(v) >= 1 && int(v) <= 1024 ? int(v) : ((v == 'auto' || v == 'gpu') && "
      "variables.gpus > 0 ? variables.gpus : 0))";
  const std::string nodes =
      "(v.substring(v.indexOf(':') + 1).matches('^[0-9]{1,18}$') && int(v.substring(v.indexOf(':') + 1)) >= 1 ? "
      "[int(v.substring(v.indexOf(':') + 1)), 1000000].min() : 0)";
  const std::string shm_path = "m.mountPath.matches('^/dev/shm/*$')";
  // Read only where the container sets one of the launch variables: most set none.
  const std::string rdma_env = "(size(variables.launchEnv[i]) > 0 && ((" + std::string(Env("NCCL_IB_DISABLE")) +
                               " != '1' && (" + Env("NCCL_NET") + ".lowerAscii() == 'ib' || " + Env("NCCL_IB_HCA") +
                               " != '')) || !(" + Env("NCCL_NET_PLUGIN") + ".lowerAscii() in ['', 'none']) || " +
                               Env("FI_PROVIDER") + ".lowerAscii() == 'efa' || " + Env("UCX_NET_DEVICES") +
                               ".contains(':')))";
  const std::string non_root =
      "(c.?securityContext.?runAsUser.orValue(object.spec.?securityContext.?runAsUser.orValue(0)) > 0 || "
      "c.?securityContext.?runAsNonRoot.orValue(object.spec.?securityContext.?runAsNonRoot.orValue(false)))";
  const std::string grants_lock =
      "(c.?securityContext.?privileged.orValue(false) || c.?securityContext.?capabilities.?add.orValue([]).exists(k, "
      "k.upperAscii() in ['IPC_LOCK', 'CAP_IPC_LOCK', 'ALL']))";
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
      {"apps", "object.spec.containers"},
      {"inits", "object.spec.?initContainers.orValue([])"},
      // pod_facts.cc ReadResources: GPUs per container (limits, else requests).
      {"appGpus", "variables.apps.map(c, " + gpus_of + ")"},
      {"launchEnv", "variables.apps.map(c, c.?env.orValue([]).filter(e, has(e.value) && e.name in " +
                        CelList(LaunchEnvNames()) + "))"},
      // Each app container's command and args as one line ('' when it has neither), its first
      // kLaunchSearchBytes searched, as launch_facts.cc FindFlag searches them: a line of any
      // length costs the same bounded find().
      {"launchLines",
       "variables.apps.map(c, has(c.command) || has(c.args) ? (c.?command.orValue([]) + "
       "c.?args.orValue([])).join(' ') : '').map(l, size(l) > " +
           std::to_string(kLaunchSearchBytes) + " ? l.substring(0, " + std::to_string(kLaunchSearchBytes) + ") : l)"},
      {"initGpus", "variables.inits.map(c, " + gpus_of + ")"},
      {"gpus", "variables.appGpus.sum()"},
      {"requestsGpus", "variables.gpus > 0 || variables.initGpus.exists(g, g > 0)"},
      // Every container, app containers then init containers, and for each its GPUs and whether
      // it mounts something at /dev/shm (pod_facts.cc IsShmPath), read once for what follows.
      {"containers", "variables.apps + variables.inits"},
      {"containerGpus", "variables.appGpus + variables.initGpus"},
      {"mountsShm", "variables.containers.map(c, c.?volumeMounts.orValue([]).exists(m, " + shm_path + "))"},
      // The memory limit: the pod's, else the sum of the app containers' and sidecars', at least
      // the largest init container's; -1 when a container has none (pod_facts.cc ReadPodFacts).
      {"containerMemory", "variables.containers.map(c, " + memory_of + ")"},
      {"memoryLimit",
       "object.spec.?resources.?limits[?'memory'].hasValue() ? " + Bytes("object.spec.resources.limits['memory']") +
           " : variables.containerMemory.exists(m, m <= 0) ? -1 : "
           "[variables.containerMemory.transformList(i, m, i < size(variables.apps) || "
           "variables.inits[i - size(variables.apps)].?restartPolicy.orValue('') == 'Always', m).sum(), "
           "(variables.containerMemory.transformList(i, m, i >= size(variables.apps) && "
           "variables.inits[i - size(variables.apps)].?restartPolicy.orValue('') != 'Always', m) + [0]).max()].max()"},
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
      // Processes: the annotation, env PET_NPROC_PER_NODE, torchrun's --nproc_per_node, the GPUs
      // (launch_facts.cc ReadLaunchFacts, in that order).
      {"procsFromEnv", "variables.apps.transformList(i, c, " + std::string(Env("PET_NPROC_PER_NODE")) +
                           ").filter(v, v != '').map(v, " + count + ").filter(n, n > 0)"},
      {"procsFromFlag", "variables.launchLines.filter(l, l != '').map(l, " +
                            Flag("--nproc_per_node|--nproc-per-node", 16) + ").map(v, " + count + ").filter(n, n > 0)"},
      {"procs",
       CountAnnotation(kProcsPerPodAnnotation) + " > 0 ? " + CountAnnotation(kProcsPerPodAnnotation) +
           " : size(variables.procsFromEnv) > 0 ? variables.procsFromEnv[0] : size(variables.procsFromFlag) > 0 ? "
           "variables.procsFromFlag[0] : variables.gpus > 0 ? [variables.gpus, 1024].min() : 1"},
      // Pods training together: the annotation, env PET_NNODES, torchrun's --nnodes ("1:4" is 4).
      {"nodesFromEnv", "variables.apps.transformList(i, c, " + std::string(Env("PET_NNODES")) +
                           ").filter(v, v != '').map(v, " + nodes + ").filter(n, n > 0)"},
      {"nodesFromFlag", "variables.launchLines.filter(l, l != '').map(l, " + Flag("--nnodes", 8) + ").map(v, " + nodes +
                            ").filter(n, n > 0)"},
      {"nodes",
       CountAnnotation(kNodesAnnotation) + " > 0 ? " + CountAnnotation(kNodesAnnotation) +
           " : size(variables.nodesFromEnv) > 0 ? variables.nodesFromEnv[0] : size(variables.nodesFromFlag) > 0 ? "
           "variables.nodesFromFlag[0] : 1"},
      // NCCL's shm transport, off when a GPU container sets NCCL_SHM_DISABLE=1.
      {"ncclShm", "!variables.apps.exists(i, c, (!variables.requestsGpus || variables.appGpus[i] > 0) && " +
                      std::string(Env("NCCL_SHM_DISABLE")) + " == '1')"},
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
      // What the pod has at /dev/shm (shm_mount.cc ReadShmMount): the volume its containers mount
      // there, else an unmounted memory emptyDir named dshm; 0 none, 1 a memory emptyDir, 2 another.
      {"shmNames", "variables.containers.map(c, c.?volumeMounts.orValue([]).filter(m, " + shm_path +
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
           rdma_env + ") && !" + non_root +
           ")))) && variables.targetBytes >= 0 && variables.privileged && !('ipc-lock-missing' in variables.exempt) "
           "&& !" +
           grants_lock + ")"},
      {"setHostIPC",
       "variables.targetBytes >= 0 && variables.hostIpcAlways && variables.privileged && !variables.hostIPC && "
       "!('host-ipc-missing' in variables.exempt)"},
      {"changes",
       "(variables.shmParts && variables.mountKind == 0) || variables.raise || "
       "variables.mountIn.exists(m, m) || variables.lockIn.exists(l, l) || variables.setHostIPC"},
  };
}

// The mutation: JSON Patch operations in the order BuildPodPatch writes them, then the plan
// annotation. Policy mode writes the plan into every pod the policy matches: it carries the
// verdict the validating policies read. Hybrid mode has no validating policies and writes it only
// with a change, the floor the webhook reads back.
constexpr std::string_view kChanges = R"((variables.shmParts && variables.mountKind == 0 ? [has(object.spec.volumes) ?
  JSONPatch{op: "add", path: "/spec/volumes/-", value: Object.spec.volumes{name: variables.volumeName, emptyDir: Object.spec.volumes.emptyDir{medium: "Memory", sizeLimit: variables.targetText}}} :
  JSONPatch{op: "add", path: "/spec/volumes", value: [Object.spec.volumes{name: variables.volumeName, emptyDir: Object.spec.volumes.emptyDir{medium: "Memory", sizeLimit: variables.targetText}}]}] : []) +
(variables.raise ? [JSONPatch{op: "add", path: "/spec/volumes/" + string(variables.volumeIndex) + "/emptyDir/sizeLimit", value: variables.targetText}] : []) +
variables.apps.transformList(i, c, variables.mountIn[i],
  has(c.volumeMounts) ?
    JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/volumeMounts/-", value: Object.spec.containers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}} :
    JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/volumeMounts", value: [Object.spec.containers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}]}) +
variables.inits.transformList(i, c, variables.mountIn[size(variables.apps) + i],
  has(c.volumeMounts) ?
    JSONPatch{op: "add", path: "/spec/initContainers/" + string(i) + "/volumeMounts/-", value: Object.spec.initContainers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}} :
    JSONPatch{op: "add", path: "/spec/initContainers/" + string(i) + "/volumeMounts", value: [Object.spec.initContainers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}]}) +
variables.apps.transformList(i, c, variables.lockIn[i],
  !has(c.securityContext) ? JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext", value: Object.spec.containers.securityContext{capabilities: Object.spec.containers.securityContext.capabilities{add: ["IPC_LOCK"]}}} :
  !has(c.securityContext.capabilities) ? JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext/capabilities", value: Object.spec.containers.securityContext.capabilities{add: ["IPC_LOCK"]}} :
  !has(c.securityContext.capabilities.add) ? JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext/capabilities/add", value: ["IPC_LOCK"]} :
  JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext/capabilities/add/-", value: "IPC_LOCK"}) +
(variables.setHostIPC ? [JSONPatch{op: "add", path: "/spec/hostIPC", value: true}] : []))";
constexpr std::string_view kPlanOp = R"([has(object.metadata.annotations) ?
  JSONPatch{op: "add", path: "/metadata/annotations/shmguard.io~1plan", value: variables.plan} :
  JSONPatch{op: "add", path: "/metadata/annotations", value: {"shmguard.io/plan": variables.plan}}])";

std::string PatchExpression(bool hybrid) {
  const std::string changes(kChanges), plan(kPlanOp);
  if (hybrid) return "!variables.changes ? [] : " + changes + " + " + plan;
  return "(!variables.changes ? [] : " + changes + ") + " + plan;
}

// The plan annotation: what the pod was given and from what (sorted keys, as the webhook's, but
// for the verdict, last, which the validating policies read), and each change the policy made,
// so that the webhook can read back the pod its author wrote (ReadPolicyFloor): the /dev/shm
// volume `volume` it `added` or raised from `raisedFrom`, the containers it mounted it in
// (`mountedIn`: app containers, then init containers, by index), those given IPC_LOCK
// (`lockedIn`) and `hostIPC`.
constexpr std::string_view kPlanVariable =
    R"('{"gpus":' + string(variables.gpus) + (variables.shmParts && variables.mountKind == 0 ? ',"added":true' : '') + (variables.setHostIPC ? ',"hostIPC":true' : '') + (variables.lockIn.exists(l, l) ? ',"lockedIn":[' + variables.lockIn.transformList(i, l, l, string(i)).join(',') + ']' : '') + (variables.mountIn.exists(m, m) ? ',"mountedIn":[' + variables.mountIn.transformList(i, m, m, string(i)).join(',') + ']' : '') + ',"nodes":' + string(variables.nodes) + ',"policyMode":true,"procs":' + string(variables.procs) + (variables.raise ? ',"raisedFrom":"' + string(variables.volumes[variables.volumeIndex].emptyDir.sizeLimit) + '"' : '') + ',"required":"' + variables.targetText + '"' + (variables.changes ? ',"volume":"' + variables.volumeName + '"' : '') + (variables.sized ? ',"workers":' + string(variables.workers) : ',"estimated":true') + ',"verdict":"' + (size(variables.problems) == 0 ? 'ok' : 'deny') + '"}')";

json Variable(const std::string& name, const std::string& expression) {
  return {{"name", name}, {"expression", expression}};
}

json ResourceRules() {
  return json::array(
      {{{"apiGroups", {""}}, {"apiVersions", {"v1"}}, {"operations", {"CREATE"}}, {"resources", {"pods"}}}});
}

}  // namespace

Result<std::vector<json>> ExportAdmissionPolicies(const Policy& policy, const PolicyExportOptions& o) {
  // The namespace rules: the index of the first that matches (the last entry is the default
  // {mode: warn}), then each rule's settings: the one value when every rule has it (no regex
  // runs then), else a list read at that index.
  std::vector<std::string> regexes, levels, lock, host_ipc, require, enforce, ignore, off;
  for (size_t i = 0; i <= policy.namespaces.size(); ++i) {
    const bool fallback = i == policy.namespaces.size();
    NamespaceRule rule = fallback ? NamespaceRule{} : policy.namespaces[i];
    levels.push_back(CelInt(static_cast<int>(rule.pod_security)));
    const IpcLockMode lock_mode = IpcLockIn(policy, rule);
    lock.push_back(CelInt(lock_mode == IpcLockMode::kAuto     ? 0
                          : lock_mode == IpcLockMode::kAlways ? 1
                          : lock_mode == IpcLockMode::kAll    ? 2
                                                              : 3));
    host_ipc.push_back(CelBool(HostIpcIn(policy, rule) == HostIpcMode::kAlways));
    require.push_back(CelBool(rule.require_annotations));
    enforce.push_back(CelBool(rule.mode == NamespaceMode::kEnforce));
    off.push_back(CelBool(rule.mode == NamespaceMode::kOff));
    std::vector<std::string> ids;
    for (Check c : rule.ignore) ids.emplace_back(InfoOf(c).id);
    ignore.push_back(CelList(ids));
    if (fallback) break;
    auto regex = RegexOf(rule.match);
    if (!regex) {
      return MakeError(Code::kInvalidInput, "namespaces[" + std::to_string(i) + "].match: " + regex.error().message);
    }
    if (regex->size() > kMaxCelRegexBytes) {
      return MakeError(Code::kInvalidInput,
                       "namespaces[" + std::to_string(i) + "].match: its globs make a regular expression of " +
                           std::to_string(regex->size()) + " bytes, more than the " +
                           std::to_string(kMaxCelRegexBytes) + " policy mode writes into CEL; split the rule");
    }
    regexes.push_back(*regex);
  }
  if (policy.namespaces.size() > kMaxCelNamespaceRules) {
    return MakeError(Code::kInvalidInput, "namespaces: " + std::to_string(policy.namespaces.size()) +
                                              " rules, more than the " + std::to_string(kMaxCelNamespaceRules) +
                                              " policy mode writes into CEL");
  }
  auto rdma = RegexOf(policy.rdma_resources);
  if (!rdma) return MakeError(Code::kInvalidInput, "rdmaResources: " + rdma.error().message);
  const auto by_rule = [](const std::vector<std::string>& values) {
    if (std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values[0]; })) {
      return values[0];
    }
    return CelArray(values) + "[variables.rule]";
  };
  // The first rule that matches, in a matchCondition, which reads no variables.
  std::string rule_expr;
  for (size_t i = 0; i < regexes.size(); ++i) rule_expr += CelString(regexes[i]) + ", ";
  rule_expr = "([" + rule_expr.substr(0, rule_expr.empty() ? 0 : rule_expr.size() - 2) +
              "].transformList(i, r, request.namespace.matches(r), i) + [" + std::to_string(regexes.size()) + "])[0]";

  std::vector<std::string> names = {kShmVolumeName};
  for (int i = 1; i <= 16; ++i) names.push_back(std::string(kShmVolumeName) + "-" + std::to_string(i));
  const auto& k = policy.sizing;
  // The policy's values, each a variable of its own whose expression is a literal: every
  // expression below is fixed text that reads them, and nothing is filled in by rescanning.
  const std::vector<std::pair<std::string, std::string>> values = {
      {"ruleRegexes", CelList(regexes)},
      {"ruleLevel", by_rule(levels)},
      {"ruleLock", by_rule(lock)},
      {"ruleHostIpc", by_rule(host_ipc)},
      {"ruleRequire", by_rule(require)},
      {"ruleEnforce", by_rule(enforce)},
      {"ruleIgnore", by_rule(ignore)},
      {"podSecurityLabel", CelString(o.pod_security_label)},
      {"enforceLabel", CelString(o.enforce_label)},
      {"gpuResources", CelList(policy.gpu_resources)},
      {"mpsResources", CelList(policy.mps_resources)},
      {"rdmaRegex", CelString(policy.rdma_resources.empty() ? "^$^" : *rdma)},
      {"prefetchDefault", CelInt(k.prefetch_factor)},
      {"safetyPpm", CelInt(k.safety_ppm)},
      {"baseBytes", CelInt(k.base_bytes)},
      {"multiGpuFloorBytes", CelInt(k.multi_gpu_floor_bytes)},
      {"ncclConnectionBytes", CelInt(k.nccl_connection_bytes)},
      {"ncclProxyBytes", CelInt(k.nccl_proxy_pool_bytes)},
      {"inFlightExtra", CelInt(k.in_flight_extra)},
      {"minimumBytes", CelInt(policy.unannotated.minimum_bytes)},
      {"fractionPpm", CelInt(policy.unannotated.fraction_ppm)},
      {"maxFractionPpm", CelInt(policy.max_fraction_ppm)},
      {"unannotatedFloor", CelBool(policy.unannotated.mode == UnannotatedMode::kFloor)},
      {"unannotatedLeave", CelBool(policy.unannotated.mode == UnannotatedMode::kLeave)},
      {"volumeNames", CelList(names)},
      {"initMountsAll", CelBool(policy.init_container_mounts == ContainerSelection::kAll)},
      {"initMountsGpu", CelBool(policy.init_container_mounts == ContainerSelection::kGpuContainers)},
  };
  // The rule's regexes, the rule, then the values (a variable reads only those before it).
  json variables = json::array();
  const auto fixed = Variables();
  for (const auto& [name, expression] : values) {
    variables.push_back(Variable(name, expression));
    if (name == "ruleRegexes") variables.push_back(Variable(fixed[0].first, fixed[0].second));
  }
  for (size_t i = 1; i < fixed.size(); ++i) variables.push_back(Variable(fixed[i].first, fixed[i].second));

  // Which pods reach the policies at all: as the chart's webhooks' matchConditions, and not in
  // a namespace whose rule is `mode: off`, nor opted out with shmguard.io/mode.
  json conditions = json::array();
  const std::string gpus = CelList(policy.gpu_resources);
  conditions.push_back(
      {{"name", "gpu-pod-or-annotated"},
       {"expression",
        "(has(object.metadata.annotations) && object.metadata.annotations.exists(k, k.startsWith('shmguard.io/'))) || "
        "(object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])).exists(c, "
        "has(c.resources) && ((has(c.resources.limits) && " +
            gpus + ".exists(g, g in c.resources.limits)) || (has(c.resources.requests) && " + gpus +
            ".exists(g, g in c.resources.requests))))"}});
  // The first rule that matches is not `mode: off` (matchConditions read no variables).
  if (std::find(off.begin(), off.end(), "true") != off.end()) {
    conditions.push_back(
        {{"name", "namespace-rule-not-off"}, {"expression", "!" + CelArray(off) + "[" + rule_expr + "]"}});
  }
  conditions.push_back({{"name", "not-opted-out"},
                        {"expression", "!has(object.metadata.annotations) || !('" + std::string(kModeAnnotation) +
                                           "' in object.metadata.annotations)"}});

  json selector = {
      {"matchExpressions",
       json::array({{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", o.excluded_namespaces}},
                    {{"key", o.enabled_label}, {"operator", "NotIn"}, {"values", {"false"}}}})}};

  json mutating_variables = variables;
  mutating_variables.push_back(Variable("plan", std::string(kPlanVariable)));
  std::vector<json> out;
  out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                 {"kind", "MutatingAdmissionPolicy"},
                 {"metadata", {{"name", o.name}}},
                 {"spec",
                  {{"matchConstraints", {{"resourceRules", ResourceRules()}}},
                   {"matchConditions", conditions},
                   {"failurePolicy", "Ignore"},
                   {"reinvocationPolicy", "Never"},
                   {"variables", mutating_variables},
                   {"mutations", json::array({{{"patchType", "JSONPatch"},
                                               {"jsonPatch", {{"expression", PatchExpression(o.hybrid)}}}}})}}}});
  out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                 {"kind", "MutatingAdmissionPolicyBinding"},
                 {"metadata", {{"name", o.name}}},
                 {"spec", {{"policyName", o.name}, {"matchResources", {{"namespaceSelector", selector}}}}}});
  if (o.hybrid) return out;

  // Validation sees the object after mutation: what is wrong with its annotations, a size over
  // the memory limit, and a /dev/shm still below need (the mutation failed or was exempted).
  // What is wrong, as the policies' `problems` says; and a /dev/shm still below need (the
  // mutation did not run, failed or was exempted).
  json validations = json::array(
      {{{"expression", "size(variables.problems) == 0"},
        {"messageExpression", "'shmguard: ' + variables.problems.join('; ')"},
        {"reason", "Invalid"}},
       {{"expression",
         "variables.targetBytes < 0 || !variables.shmParts || (variables.mountKind == 1 && variables.sizeLimit != 0 && "
         "variables.sizeLimit >= variables.targetBytes && variables.gpuContainersMount)"},
        {"messageExpression",
         "'shmguard: /dev/shm needs ' + string(variables.targetBytes) + ' bytes; the pod was not patched'"},
        {"reason", "Invalid"}}});
  // The mutating policy's own verdict, which it writes into every pod it matches: a pod it found
  // nothing wrong with and patched is not evaluated again.
  json vconditions = conditions;
  vconditions.push_back(
      {{"name", "not-judged-ok"},
       {"expression",
        "!has(object.metadata.annotations) || !('shmguard.io/plan' in object.metadata.annotations) || "
        "!object.metadata.annotations['shmguard.io/plan'].endsWith(',\"verdict\":\"ok\"}')"}});
  for (const bool enforcing : {true, false}) {
    const std::string name = o.name + (enforcing ? "-enforce" : "-warn");
    // matchConditions have no namespaceObject: which of the two applies is each validation's
    // first term.
    json checks = validations;
    for (auto& v : checks) {
      v["expression"] =
          std::string(enforcing ? "!" : "") + "variables.enforce || (" + v["expression"].get<std::string>() + ")";
    }
    out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", "ValidatingAdmissionPolicy"},
                   {"metadata", {{"name", name}}},
                   {"spec",
                    {{"matchConstraints", {{"resourceRules", ResourceRules()}}},
                     {"matchConditions", vconditions},
                     {"failurePolicy", "Ignore"},
                     {"variables", variables},
                     {"validations", checks}}}});
    out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", "ValidatingAdmissionPolicyBinding"},
                   {"metadata", {{"name", name}}},
                   {"spec",
                    {{"policyName", name},
                     {"validationActions", enforcing ? json::array({"Deny"}) : json::array({"Warn"})},
                     {"matchResources", {{"namespaceSelector", selector}}}}}});
  }
  return out;
}

std::string GlobToRegex(std::string_view glob) {
  auto r = GlobRegex(glob);
  return r ? *r : std::string();
}

}  // namespace shmguard
