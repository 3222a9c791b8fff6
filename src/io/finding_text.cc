// FindingText: one sentence per check, and the plan's arithmetic (ExplainPlan).
#include "io/finding_text.h"

#include "shmguard/quantity.h"

namespace shmguard::io {
namespace {

std::string Plural(int64_t n, const char* word, const char* plural = nullptr) {
  return std::to_string(n) + " " + (n == 1 ? word : plural ? plural : std::string(word) + "s");
}

std::string Bytes(const Finding& f, std::string_view name) { return FormatBytes(f.Number(name)); }

// "the 1Gi floor (NCCL shm and base for 2 procs = 1Gi, at least the 1Gi minimum)".
std::string Floor(const Finding& f) {
  std::string what = f.Number("nccl_shm") ? "NCCL shm" : "";
  if (f.Number("nccl_proxy")) what += std::string(what.empty() ? "" : ", ") + "NCCL proxy";
  what += std::string(what.empty() ? "" : " and ") + "base";
  return "the " + Bytes(f, "floor_bytes") + " floor (" + what + " for " + Plural(f.Number("procs"), "proc") + " = " +
         Bytes(f, "floor_plan_bytes") + ", at least the " + Bytes(f, "minimum_bytes") + " minimum)";
}

std::string Plan(const Finding& f) {
  const int64_t n = f.Number("procs");
  std::string terms;
  auto term = [&](int64_t bytes, const std::string& text) {
    if (bytes == 0) return;
    terms += (terms.empty() ? "" : " + ") + text;
  };
  if (f.Number("workers") > 0) {
    term(f.Number("dataloader_bytes"), Plural(n, "proc") + " × (" + Plural(f.Number("workers"), "worker") + " × " +
                                           std::to_string(f.Number("prefetch_factor")) + " + " +
                                           std::to_string(f.Number("in_flight_extra")) + ") × " +
                                           HumanBytes(f.Number("batch_bytes")));
  }
  term(f.Number("nccl_bytes"), HumanBytes(f.Number("nccl_bytes")) + " NCCL");
  term(f.Number("base_bytes"), HumanBytes(f.Number("base_bytes")) + " base");
  return f.Value("volume") + " needs " + Bytes(f, "required_bytes") + " = (" + terms + ") × " +
         FormatPpm(f.Number("safety_ppm")) +
         (f.Number("floor_applied") ? ", raised to the " + Bytes(f, "required_bytes") + " floor for multi-GPU pods"
                                    : std::string()) +
         " (" + Plural(n, "proc") + " from " + f.Value("procs_source") + ")";
}

constexpr const char* kExact = "; set shmguard.io/num-workers and shmguard.io/batch-bytes for an exact size";

std::string OverMemoryLimit(const Finding& f) {
  const bool floor = f.Number("floor") != 0;
  const std::string what = floor ? "floor of a GPU pod" : f.Value("volume") + " needs";
  const std::string remedy =
      floor ? "raise the memory limit" : "raise the limit or lower num-workers/prefetch-factor/batch size";
  const std::string limit = Bytes(f, "memory_limit_bytes");
  std::string out = floor ? "no DataLoader annotations; /dev/shm needs at least " + Floor(f) + "; " : "";
  if (!f.HasNumber("max_fraction_ppm")) {
    return out + "memory limit " + limit + " (" + f.Value("limit_source") + ") is below the " +
           Bytes(f, "required_bytes") + " " + what + ": " + remedy;
  }
  return out + what + " " + Bytes(f, "required_bytes") + " is more than " + FormatPpm(f.Number("max_fraction_ppm")) +
         " of the memory limit " + limit + ", leaving " + HumanBytes(f.Number("left_bytes")) +
         " for the processes: " + remedy;
}

std::string BelowNeed(const Finding& f) {
  const std::string current = f.Value("current"), needed = Bytes(f, "required_bytes");
  if (f.Number("unpatched")) {
    std::string fix = f.Number("operator_shm")
                          ? "raise the Ray container's memory limit (KubeRay sizes /dev/shm to it) "
                            "or mount an emptyDir {medium: Memory} of that size at /dev/shm"
                          : "mount an emptyDir {medium: Memory} of that size at /dev/shm";
    return "/dev/shm is " + current + ", below the " + needed + " needed; shmguard does not patch a " +
           f.Value("kind") + ": " + fix;
  }
  if (!f.Value("containers").empty()) {
    return "/dev/shm is not mounted in " + f.Value("containers") + ": they get the container default 64Mi, below the " +
           needed + " needed";
  }
  if (f.HasNumber("floor_bytes")) return "/dev/shm is " + current + ", below " + Floor(f);
  return "/dev/shm is " + current + ", below the " + needed + " needed";
}

std::string TrainjobWhere(const std::string& api) {
  if (api == "podTemplateOverrides") return "spec.podTemplateOverrides[].metadata.annotations (Trainer v2.1)";
  if (api == "podSpecOverrides")
    return "the runtime's pod templates (Trainer v2.0 has no pod metadata in podSpecOverrides)";
  return "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[name: node].template.spec."
         "template.metadata.annotations (Trainer v2.2 and later), or the runtime's pod template";
}

}  // namespace

std::string FindingText(const Finding& f) {
  switch (f.check) {
    case Check::kShmPlan: return Plan(f);
    case Check::kSizedWithoutAnnotations:
      if (f.HasNumber("from_bytes")) {
        return "sized without DataLoader annotations: /dev/shm raised from " + Bytes(f, "from_bytes") + " to " +
               Floor(f) + kExact;
      }
      return "sized without DataLoader annotations: " + Bytes(f, "required_bytes") + " = " + f.Value("basis") + kExact;
    case Check::kSizedFromObservation: {
      const std::string source = " (" + f.Value("workload") + ", " + std::to_string(f.Number("runs")) +
                                 (f.Number("runs") == 1 ? " run" : " runs") + ", last " + f.Value("last_observed") +
                                 ")";
      const std::string peak =
          "the observed peak " + HumanBytes(f.Number("peak_bytes")) + " × " + FormatPpm(f.Number("margin_ppm"));
      if (f.Number("formula_bytes") > f.Number("learned_bytes")) {
        return "sized from use: " + peak + " = " + Bytes(f, "learned_bytes") + source + "; the formula's " +
               Bytes(f, "formula_bytes") + " is larger and stays";
      }
      return "sized from use: " + Bytes(f, "required_bytes") + " = " + peak + source;
    }
    case Check::kShmOverMemoryLimit: return OverMemoryLimit(f);
    case Check::kMemoryHeadroom:
      return "memory limit " + Bytes(f, "memory_limit_bytes") + " leaves " + HumanBytes(f.Number("left_bytes")) +
             " for the processes (" + f.Value("volume") + " pages count against the limit)";
    case Check::kMemoryLimitMissing:
      return "no memory limit (" + f.Value("limit_source") + "): " + f.Value("volume") + " pages are bounded only by " +
             (f.Number("compose") ? "shm_size and host memory" : "sizeLimit and node memory");
    case Check::kSizeLimitOverMemoryLimit:
      if (f.Number("compose")) {
        return "shm_size " + Bytes(f, "size_bytes") + " exceeds the memory limit " + Bytes(f, "memory_limit_bytes") +
               ": filling /dev/shm past it gets the container OOM-killed";
      }
      return "sizeLimit " + Bytes(f, "size_bytes") + " exceeds the memory limit " + Bytes(f, "memory_limit_bytes") +
             "; the kubelet caps it at " + Bytes(f, "memory_limit_bytes");
    case Check::kShmBelowNeed: return BelowNeed(f);
    case Check::kShmSufficient:
      if (f.HasNumber("floor_bytes")) {
        return f.Number("host_ipc") ? "uses " + f.Value("current") + ", at least " + Floor(f)
                                    : "/dev/shm " + f.Value("current") + " covers " + Floor(f);
      }
      return "/dev/shm " + f.Value("current") + " covers the " + Bytes(f, "required_bytes") +
             " needed (shmguard does not patch a " + f.Value("kind") + ")";
    case Check::kShmNotMemoryBacked:
      return "/dev/shm is mounted from " + f.Value("mount") +
             (f.severity == Severity::kError ? "; shmguard only sizes an emptyDir {medium: Memory}: replace it"
                                             : "; without DataLoader annotations shmguard leaves it as it is");
    case Check::kShmPatchedAtCreation:
      if (!f.Value("unknown").empty()) {
        return "needs /dev/shm of " + Bytes(f, "required_bytes") + "; what its pods have is unknown (" +
               f.Value("unknown") + "); shmguard patches them when they are created if they have less";
      }
      return "/dev/shm is " + f.Value("current") + ", below the " + Bytes(f, "required_bytes") +
             " needed: shmguard does not patch a " + f.Value("kind") + "; its pods are patched when they are created";
    case Check::kIpcLockMissing:
      if (f.pointer.size() >= 16 && f.pointer.compare(f.pointer.size() - 16, 16, "/ulimits/memlock") == 0) {
        return "locked memory of " + f.Value("containers") +
               " is limited (ulimits.memlock): pin_memory cannot lock its buffers";
      }
      return "no IPC_LOCK in " + f.Value("containers") + ": pin_memory cannot lock its buffers";
    case Check::kHostIpcMissing:
      return "hostIPC is not set on a pod with " + std::to_string(f.Number("gpus")) + " GPUs";
    case Check::kHostIpcUnavailable:
      return "hostIPC not set: a " + f.Value("kind") + " has no hostIPC field for its pods";
    case Check::kPodSecurityLimitsPatch:
      return f.Value("field") == "hostIPC" ? "hostIPC not set: Pod Security " + f.Value("level") + " forbids it"
                                           : "IPC_LOCK not added: Pod Security " + f.Value("level") + " forbids it";
    case Check::kAnnotationInvalid: return "annotation " + f.Value("annotation") + ": " + f.Value("error");
    case Check::kAnnotationsRequired:
      return "GPU pods in this namespace must declare shmguard.io/num-workers and shmguard.io/batch-bytes "
             "(DataLoader num_workers and bytes per batch)";
    case Check::kObjectInvalid:
      return f.Value("where").empty() ? f.Value("error") : f.Value("where") + ": " + f.Value("error");
    case Check::kTrainjobAnnotationsIgnored:
      return f.Value("annotations") +
             " on the TrainJob's own metadata never reach its pods and are not used: put them in " +
             TrainjobWhere(f.Value("api"));
    case Check::kTrainjobRuntime:
      return f.Number("found") ? "evaluated as the pods of " + f.Value("runtime") +
                                     " (in this input) with the TrainJob's trainer settings and patches"
                               : f.Value("runtime") +
                                     " is not in the input: evaluated from what the TrainJob states; audit it together "
                                     "with its runtime for the runtime's /dev/shm";
    case Check::kComposeShmDefault:
      return "the service has Docker's default 64Mi /dev/shm (no shm_size), below " +
             (f.HasNumber("floor_bytes") ? Floor(f) : "the " + Bytes(f, "required_bytes") + " needed");
    case Check::kComposeIpcHost:
      return "ipc: host: the service uses the host's /dev/shm, which Docker does not size (it ignores shm_size then); "
             "the host needs " +
             Bytes(f, "required_bytes") + " free there";
    case Check::kComposeGpuCountUnknown:
      return "the service reserves every GPU of the host (count: all or no count), a number shmguard cannot know: "
             "sized for 1 GPU; set the label shmguard.io/procs-per-pod to its processes";
    case Check::kNcclP2pDisabled:
      return "NCCL_P2P_DISABLE=1 (" + f.Value("source") +
             "): NCCL moves intra-node traffic through /dev/shm instead of GPU peer-to-peer";
    case Check::kNcclShmDisabled:
      return "NCCL_SHM_DISABLE=1 (" + f.Value("source") +
             "): NCCL's shared-memory transport is off, so no NCCL shm term";
    case Check::kProcsGpusMismatch: {
      const int64_t procs = f.Number("procs"), gpus = f.Number("gpus");
      return Plural(procs, "process", "processes") + " per pod (" + f.Value("procs_source") + ") but " +
             Plural(gpus, "GPU") + ": " +
             (procs < gpus ? Plural(gpus - procs, "GPU") + (gpus - procs == 1 ? " stays idle" : " stay idle")
                           : "several processes share a GPU");
    }
    case Check::kSingleGpuPods:
      return std::to_string(f.Number("pods")) + " pods with 1 GPU each train together (" + f.Value("pods_source") +
             "): NCCL carries all their traffic over the network (via NET), where one pod with several GPUs would "
             "use NVLink or PCIe P2P (via P2P or SHM); neither layout always wins — on p4d.24xlarge with EFA, 1 pod "
             "× 4 GPUs took 30:00 and 4 pods × 1 GPU 28:15";
    case Check::kNoGpus: return "no GPUs and no sizing annotations";
    case Check::kOptedOut: return "opted out with shmguard.io/mode: skip";
    case Check::kUnannotatedLeft:
      return "no sizing annotations (shmguard.io/num-workers, shmguard.io/batch-bytes); the policy leaves such GPU "
             "pods as they are";
    case Check::kNamespaceOff:
      return f.Number("cluster_scoped") ? "cluster-scoped objects are off in the policy (its \"*\" rule)"
                                        : "namespace " + f.Value("namespace") + " is off in the policy";
    case Check::kNotAWorkload: return f.Value("error");
    case Check::kNoPodTemplates: return "no pod templates";
    case Check::kDocumentUnreadable: return f.Value("error");
  }
  return std::string(f.id());
}

std::string FindingLine(const Finding& f, bool prefix_pod) {
  return prefix_pod && !f.pod.empty() ? f.pod + ": " + FindingText(f) : FindingText(f);
}

std::vector<std::string> FindingLines(const Evaluation& ev, Severity min) {
  std::vector<std::string> out;
  const bool prefix = ev.pods.size() > 1;
  for (const Finding& f : ev.AllFindings()) {
    if (!f.suppressed && f.severity >= min) out.push_back(FindingLine(f, prefix));
  }
  return out;
}

std::vector<std::string> ExplainPlan(const ShmPlan& p, const SizingConstants& k) {
  const ShmInputs& in = p.inputs;
  const int64_t n = in.procs;
  std::vector<std::string> lines;
  if (in.workers > 0) {
    lines.push_back("DataLoader: " + Plural(n, "proc") + " × (" + Plural(in.workers, "worker") + " × " +
                    std::to_string(in.prefetch_factor) + " prefetch + " + std::to_string(k.in_flight_extra) + ") × " +
                    HumanBytes(in.batch_bytes) + " = " + HumanBytes(p.dataloader_bytes));
  } else {
    lines.push_back("DataLoader: 0 workers, batches stay in the training process = 0");
  }
  if (n >= 2 && !in.nccl_shm) {
    lines.push_back("NCCL shm transport: off (NCCL_SHM_DISABLE=1) = 0");
  } else if (n >= 2) {
    int64_t peers = n == 2 ? 1 : 2;  // NCCL's shm transport: ring neighbours
    lines.push_back("NCCL shm transport: " + Plural(n, "proc") + " × 2 channels × " + Plural(peers, "peer") + " × " +
                    std::to_string(k.nccl_connection_bytes) + " B = " + HumanBytes(p.nccl_shm_bytes));
  }
  if (in.nodes > 1) {
    lines.push_back("NCCL proxy pool (multi-node, " + Plural(in.nodes, "pod") + "): " + Plural(n, "proc") + " × " +
                    std::to_string(k.nccl_proxy_pool_bytes) + " B = " + HumanBytes(p.nccl_proxy_bytes));
  }
  lines.push_back("base: " + HumanBytes(p.base_bytes));
  const int64_t sum = p.dataloader_bytes + p.nccl_shm_bytes + p.nccl_proxy_bytes + p.base_bytes;
  lines.push_back("sum " + HumanBytes(sum) + " × " + FormatPpm(k.safety_ppm) +
                  " safety, rounded up to MiB = " + FormatBytes(p.safe_bytes));
  if (p.floor_applied) {
    lines.push_back("floor for " + Plural(n, "proc") +
                    " per pod (NVIDIA's 1g advice): " + FormatBytes(p.required_bytes));
  }
  return lines;
}

}  // namespace shmguard::io
