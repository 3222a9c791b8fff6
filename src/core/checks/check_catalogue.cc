// The catalogue of checks: one row per check with everything that describes it — ID, default
// severity, title, the names of its numbers and values, and its words. The lookups over the rows
// and Finding's accessors are in checks.cc.
#include "core/checks/internal/check_catalogue.h"

#include "core/checks/internal/check_words.h"
#include "core/values/human_units.h"

namespace shmguard::checks {
namespace {

using S = Severity;
using F = Finding;

}  // namespace

// One check per row: its ID (stable: tools and exemptions name it; its section of docs/checks.md
// has it as anchor), default severity, title, the names of the numbers and of the values its
// findings carry (that section lists the same), and its words, which read no other names.
// clang-format off
extern constexpr std::array<CheckInfo, kCheckCount> kChecks = {{
    {Check::kShmPlan, "shm-plan", S::kInfo, "The /dev/shm size the pod needs, and the arithmetic behind it",
     "required_bytes procs workers prefetch_factor in_flight_extra batch_bytes dataloader_bytes nccl_bytes server_bytes base_bytes safety_ppm floor_applied", "volume procs_source server_terms",
     PlanWords},
    {Check::kSizedWithoutAnnotations, "sized-without-annotations", S::kWarning, "A GPU pod sized without DataLoader annotations: an estimate",
     "required_bytes from_bytes floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "basis",
     [](const F& f) -> std::string {
       if (f.HasNumber("from_bytes")) {
         return "sized without DataLoader annotations: /dev/shm raised from " + Bytes(f, "from_bytes") + " to " + Floor(f) + kExact;
       }
       return "sized without DataLoader annotations: " + Bytes(f, "required_bytes") + " = " + f.Value("basis") + kExact;
     }},
    {Check::kSizedFromServerLaunch, "sized-from-server-launch", S::kInfo, "An inference server sized from its launch arguments",
     "required_bytes server_bytes gpus", "server launched_by read terms unbounded unread unchecked config",
     [](const F& f) -> std::string {
       std::string out = "sized for " + f.Value("server") + " from its launch (" + f.Value("launched_by") +
                         (f.Value("read").empty() ? "" : ": " + f.Value("read")) + "): " + Bytes(f, "required_bytes");
       out += f.Number("server_bytes") ? " with its own segments " + f.Value("terms")
                                       : " (its own segments: none beyond NCCL's)";
       if (!f.Value("config").empty()) {
         out += "; its --config " + f.Value("config") +
                " is not in the input: the counts it may set are taken as the pod's " + Plural(f.Number("gpus"), "GPU") +
                ", and any segment it adds is not counted";
       }
       if (!f.Value("unread").empty()) {
         out += "; " + f.Value("unread") + " names a variable the spec does not set: taken as the pod's " +
                Plural(f.Number("gpus"), "GPU");
       }
       if (!f.Value("unchecked").empty()) {
         out += "; " + f.Value("unchecked") + " without checking /dev/shm's free space: a shortfall is a Bus error, "
                "not a refusal at start";
       }
       if (!f.Value("unbounded").empty()) out += "; not bounded here: " + f.Value("unbounded");
       return out + "; its launch flags change the size, not DataLoader annotations";
     }},
    {Check::kLaunchUnread, "launch-unread", S::kWarning, "A container's launch is too long to read",
     "", "error",
     [](const F& f) -> std::string {
       return "the launch is not read: " + f.Value("error") + "; the pod is sized as if it launched no inference server";
     }},
    {Check::kClaimsUnknown, "claims-unknown", S::kWarning, "The pod's resource claims are not in the input",
     "gpus procs", "claims procs_source",
     [](const F& f) -> std::string {
       std::string out = "its GPUs through " + f.Value("claims") + " are unknown: ";
       if (f.Number("gpus") > 0) {
         return out + "sized for " + Plural(f.Number("gpus"), "GPU") + " from its launch (" + f.Value("procs_source") +
                "); give the audit the claims, or audit the pods on the cluster (--resource-claims)";
       }
       return out + "sized as a pod without GPUs; give the audit the claims, or audit the pods on the cluster";
     }},
    {Check::kSizedFromObservation, "sized-from-observation", S::kInfo, "Sized from what the workload's pods used: the observed peak times the margin",
     "required_bytes learned_bytes formula_bytes peak_bytes margin_ppm runs", "workload last_observed last_pod",
     ObservedWords},
    {Check::kShmOverMemoryLimit, "shm-over-memory-limit", S::kError, "The /dev/shm needed does not fit the memory limit",
     "required_bytes memory_limit_bytes max_fraction_ppm left_bytes floor compose server floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "volume limit_source",
     OverMemoryLimitWords},
    {Check::kMemoryHeadroom, "memory-headroom", S::kInfo, "What the memory limit leaves the processes once /dev/shm is full",
     "memory_limit_bytes left_bytes floor compose", "volume limit_source",
     [](const F& f) -> std::string {
       return "memory limit " + Bytes(f, "memory_limit_bytes") + " leaves " + HumanBytes(f.Number("left_bytes")) +
              " for the processes (" + f.Value("volume") + " pages count against the limit)";
     }},
    {Check::kMemoryLimitMissing, "memory-limit-missing", S::kWarning, "No memory limit: /dev/shm pages are bounded only by the node",
     "floor compose", "volume limit_source",
     [](const F& f) -> std::string {
       return "no memory limit (" + f.Value("limit_source") + "): " + f.Value("volume") + " pages are bounded only by " +
              (f.Number("compose") ? "shm_size and host memory" : "sizeLimit and node memory");
     }},
    {Check::kSizeLimitOverMemoryLimit, "sizelimit-over-memory-limit", S::kWarning, "A /dev/shm size above the memory limit, which caps it",
     "size_bytes memory_limit_bytes compose", "",
     [](const F& f) -> std::string {
       if (f.Number("compose")) {
         return "shm_size " + Bytes(f, "size_bytes") + " exceeds the memory limit " + Bytes(f, "memory_limit_bytes") +
                ": filling /dev/shm past it gets the container OOM-killed";
       }
       return "sizeLimit " + Bytes(f, "size_bytes") + " exceeds the memory limit " + Bytes(f, "memory_limit_bytes") +
              "; the kubelet caps it at " + Bytes(f, "memory_limit_bytes");
     }},
    {Check::kResizeBelowShm, "resize-below-shm", S::kError, "A resize leaves the memory limit too small for the pod's /dev/shm",
     "shm_bytes memory_limit_bytes was_memory_limit_bytes max_fraction_ppm minimum_bytes", "volume limit_source shm_source",
     [](const F& f) -> std::string {
       // Said of a resize (the limit before it known), or of a pod as it runs (the node agent).
       const std::string limit = "the memory limit " + Bytes(f, "memory_limit_bytes") + " (" + f.Value("limit_source");
       const std::string opening = f.HasNumber("was_memory_limit_bytes")
                                       ? "this resize leaves " + limit + "; was " + Bytes(f, "was_memory_limit_bytes") + ")"
                                       : limit + ") is";
       return opening + " too small for " + f.Value("volume") + "'s " + Bytes(f, "shm_bytes") + " (" + f.Value("shm_source") +
              "): /dev/shm's pages count against the limit, and may take at most " + FormatPpm(f.Number("max_fraction_ppm")) +
              " of it; keep the limit at " + Bytes(f, "minimum_bytes") + " or more, or the pod is OOM-killed when /dev/shm fills";
     }},
    {Check::kShmBelowNeed, "shm-below-need", S::kWarning, "/dev/shm is smaller than the pod needs",
     "required_bytes current_bytes unpatched operator_shm floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "current containers kind",
     BelowNeedWords},
    {Check::kShmSufficient, "shm-sufficient", S::kInfo, "/dev/shm already covers what the pod needs",
     "required_bytes learned_bytes host_ipc unbounded memory_limit_bytes floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "current kind",
     [](const F& f) -> std::string {
       if (f.Number("unbounded")) {
         return "/dev/shm is a memory emptyDir without sizeLimit, which the kubelet sizes at " +
                (f.HasNumber("memory_limit_bytes") ? "the " + Bytes(f, "memory_limit_bytes") + " memory limit"
                                                   : std::string("the node's memory (the pod has no memory limit)")) +
                ": it covers the " + Bytes(f, "required_bytes") + " needed and is left as it is; set sizeLimit: " +
                Bytes(f, "required_bytes") + " to cap it";
       }
       if (f.HasNumber("floor_bytes")) {
         return f.Number("host_ipc") ? "uses " + f.Value("current") + ", at least " + Floor(f)
                                     : "/dev/shm " + f.Value("current") + " covers " + Floor(f);
       }
       return "/dev/shm " + f.Value("current") + " covers the " + Bytes(f, "required_bytes") + " needed" +
              (f.Value("kind").empty() ? std::string() : " (shmguard does not patch " + AKind(f) + ")");
     }},
    {Check::kShmNotMemoryBacked, "shm-not-memory-backed", S::kError, "/dev/shm is mounted from something other than a memory emptyDir",
     "", "mount",
     [](const F& f) -> std::string {
       return "/dev/shm is mounted from " + f.Value("mount") +
              (f.severity == Severity::kError ? "; shmguard only sizes an emptyDir {medium: Memory}: replace it"
                                              : "; without DataLoader annotations shmguard leaves it as it is");
     }},
    {Check::kShmReadOnly, "shm-read-only", S::kError, "/dev/shm is mounted read-only",
     "", "containers",
     [](const F& f) -> std::string {
       return "/dev/shm is mounted readOnly in " + f.Value("containers") +
              ": DataLoader workers and NCCL cannot create their segments there (EROFS); remove readOnly";
     }},
    {Check::kShmPatchedAtCreation, "shm-patched-at-creation", S::kInfo, "Not patched here: its pods are patched when they are created",
     "required_bytes", "current kind unknown",
     [](const F& f) -> std::string {
       if (!f.Value("unknown").empty()) {
         return "needs /dev/shm of " + Bytes(f, "required_bytes") + "; what its pods have is unknown (" +
                f.Value("unknown") + "); shmguard patches them when they are created if they have less";
       }
       return "/dev/shm is " + f.Value("current") + ", below the " + Bytes(f, "required_bytes") +
              " needed: shmguard does not patch " + AKind(f) + "; its pods are patched when they are created";
     }},
    {Check::kMpsShm, "mps-shm", S::kInfo, "An MPS client: its /dev/shm is the MPS daemon's, and no dshm is added over it",
     "required_bytes", "resource containers",
     [](const F& f) -> std::string {
       return f.Value("containers") + " requests " + f.Value("resource") +
              ", served through MPS (policy mpsResources): the device plugin mounts the MPS daemon's /dev/shm there "
              "and a dshm would hide it, so none is added (the pod needs " + Bytes(f, "required_bytes") + ")";
     }},
    {Check::kIpcLockMissing, "ipc-lock-missing", S::kWarning, "A GPU container that registers host memory for RDMA as root has no IPC_LOCK",
     "", "containers reason user",
     [](const F& f) -> std::string {
       const std::string& reason = f.Value("reason");
       const bool policy = reason.rfind("policy ", 0) == 0;
       if (std::string_view(f.pointer).ends_with("/ulimits/memlock")) {
         return "locked memory of " + f.Value("containers") + " is limited (ulimits.memlock)" +
                (policy ? " and " + reason + " raises it"
                        : ", and it registers host memory for RDMA (" + reason + "), which fails past that limit");
       }
       if (policy) return "no IPC_LOCK in " + f.Value("containers") + " (" + reason + ")";
       const std::string as = f.Value("user") == "runAsUser unset" ? "root unless its image sets a user (runAsUser unset)"
                                                                    : "root (" + f.Value("user") + ")";
       return "no IPC_LOCK in " + f.Value("containers") + ", which registers host memory for RDMA (" + reason +
              ") as " + as + ": registration fails past RLIMIT_MEMLOCK";
     }},
    {Check::kIpcLockNonRoot, "ipc-lock-non-root", S::kWarning, "A non-root GPU container registers host memory for RDMA: IPC_LOCK would not take effect",
     "", "containers reason user",
     [](const F& f) -> std::string {
       return f.Value("containers") + " registers host memory for RDMA (" + f.Value("reason") + ") as non-root (" +
              f.Value("user") +
              "), where IPC_LOCK never takes effect: raise RLIMIT_MEMLOCK instead (the node's container runtime "
              "with LimitMEMLOCK=infinity; securityContext.ulimits is in no Kubernetes release through 1.37)";
     }},
    {Check::kHostIpcMissing, "host-ipc-missing", S::kInfo, "hostIPC added because the policy says always",
     "gpus", "",
     [](const F&) -> std::string {
       return "hostIPC: true (policy hostIPC: always): the pod joins the node's IPC namespace (System V IPC, POSIX "
              "message queues), which NCCL does not use; its /dev/shm stays the pod's own";
     }},
    {Check::kHostIpcUnavailable, "host-ipc-unavailable", S::kInfo, "The kind has no hostIPC field for its pods",
     "", "kind",
     [](const F& f) -> std::string { return "hostIPC not set: a " + f.Value("kind") + " has no hostIPC field for its pods"; }},
    {Check::kPodSecurityLimitsPatch, "pod-security-limits-patch", S::kWarning, "Pod Security keeps hostIPC or IPC_LOCK out of the patch",
     "", "level field",
     [](const F& f) -> std::string {
       return (f.Value("field") == "hostIPC" ? "hostIPC not set" : "IPC_LOCK not added") +
              std::string(": Pod Security ") + f.Value("level") + " forbids it";
     }},
    {Check::kAnnotationInvalid, "annotation-invalid", S::kError, "A shmguard.io/ annotation is malformed",
     "", "annotation error",
     [](const F& f) -> std::string { return "annotation " + f.Value("annotation") + ": " + f.Value("error"); }},
    {Check::kAnnotationsRequired, "annotations-required", S::kError, "The namespace requires DataLoader annotations on GPU pods",
     "", "",
     [](const F&) -> std::string {
       return "GPU pods in this namespace must declare shmguard.io/num-workers and shmguard.io/batch-bytes "
              "(DataLoader num_workers and bytes per batch)";
     }},
    {Check::kObjectInvalid, "object-invalid", S::kError, "A field shmguard reads has the wrong type or value",
     "", "where error",
     [](const F& f) -> std::string {
       return f.Value("where").empty() ? f.Value("error") : f.Value("where") + ": " + f.Value("error");
     }},
    {Check::kReviewOverBudget, "review-over-budget", S::kError, "The review took more work than one review may",
     "", "",
     [](const F&) -> std::string {
       return "the review took more CPU time than shmguard gives one (--review-cpu-budget-ms): it is left unsized";
     }},
    {Check::kTrainjobAnnotationsIgnored, "trainjob-annotations-ignored", S::kWarning, "shmguard.io/ annotations on a TrainJob never reach its pods",
     "", "annotations api",
     [](const F& f) -> std::string {
       return f.Value("annotations") + " on the TrainJob's own metadata never reach its pods and are not used: put them in " +
              TrainjobWhere(f.Value("api"));
     }},
    {Check::kTrainjobRuntime, "trainjob-runtime", S::kInfo, "How a TrainJob was read: with its runtime, or from what it states",
     "found", "runtime",
     [](const F& f) -> std::string {
       return f.Number("found") ? "evaluated as the pods of " + f.Value("runtime") +
                                      " (in this input) with the TrainJob's trainer settings and patches"
                                : f.Value("runtime") +
                                      " is not in the input: evaluated from what the TrainJob states; audit it together "
                                      "with its runtime for the runtime's /dev/shm";
     }},
    {Check::kServingRuntime, "serving-runtime", S::kInfo, "How a KServe InferenceService was read: with its ServingRuntime, or from what it states",
     "found", "runtime",
     [](const F& f) -> std::string {
       return f.Number("found") ? "evaluated as the pods KServe builds from " + f.Value("runtime") +
                                      " (in this input) and the predictor"
                                : f.Value("runtime") +
                                      " is not in the input: the server's command and the runtime's volumes come from "
                                      "it; audit them together for the predictor's /dev/shm and server";
     }},
    {Check::kComposeShmDefault, "compose-shm-default", S::kWarning, "A Compose service relies on Docker's 64 MiB /dev/shm",
     "required_bytes floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "current",
     [](const F& f) -> std::string {
       return "the service has Docker's default 64Mi /dev/shm (no shm_size), below " +
              (f.HasNumber("floor_bytes") ? Floor(f) : "the " + Bytes(f, "required_bytes") + " needed");
     }},
    {Check::kComposeIpcHost, "compose-ipc-host", S::kInfo, "A Compose service uses the host's /dev/shm (ipc: host)",
     "required_bytes", "",
     [](const F& f) -> std::string {
       return "ipc: host: the service uses the host's /dev/shm, which Docker does not size (it ignores shm_size then); "
              "the host needs " + Bytes(f, "required_bytes") + " free there";
     }},
    {Check::kComposeGpuCountUnknown, "compose-gpu-count-unknown", S::kWarning, "A Compose service reserves every GPU of the host: a count shmguard cannot know",
     "", "",
     [](const F&) -> std::string {
       return "the service reserves every GPU of the host (count: all or no count), a number shmguard cannot know: "
              "sized for 1 GPU; set the label shmguard.io/procs-per-pod to its processes";
     }},
    {Check::kNcclP2pDisabled, "nccl-p2p-disabled", S::kInfo, "NCCL_P2P_DISABLE=1: intra-node NCCL traffic goes through /dev/shm",
     "", "source",
     [](const F& f) -> std::string {
       return "NCCL_P2P_DISABLE=1 (" + f.Value("source") +
              "): NCCL moves intra-node traffic through /dev/shm instead of GPU peer-to-peer";
     }},
    {Check::kNcclShmDisabled, "nccl-shm-disabled", S::kInfo, "NCCL_SHM_DISABLE=1: no NCCL shared-memory term",
     "", "source",
     [](const F& f) -> std::string {
       return "NCCL_SHM_DISABLE=1 (" + f.Value("source") + "): NCCL's shared-memory transport is off, so no NCCL shm term";
     }},
    {Check::kProcsGpusMismatch, "procs-gpus-mismatch", S::kWarning, "Processes per pod differ from the GPUs it requests",
     "procs gpus", "procs_source",
     ProcsGpusWords},
    {Check::kSingleGpuPods, "single-gpu-pods", S::kInfo, "A job of several one-GPU pods: NCCL crosses the network between them",
     "pods", "pods_source",
     [](const F& f) -> std::string {
       return std::to_string(f.Number("pods")) + " pods with 1 GPU each train together (" + f.Value("pods_source") +
              "): NCCL carries all their traffic over the network (via NET), where one pod with several GPUs would "
              "use NVLink or PCIe P2P (via P2P or SHM); neither layout always wins — on p4d.24xlarge with EFA, 1 pod "
              "× 4 GPUs took 30:00 and 4 pods × 1 GPU 28:15";
     }},
    {Check::kNoGpus, "no-gpus", S::kInfo, "No GPUs and no sizing annotations: nothing to size",
     "", "",
     [](const F&) -> std::string { return "no GPUs and no sizing annotations"; }},
    {Check::kOptedOut, "opted-out", S::kInfo, "Opted out with shmguard.io/mode: skip",
     "", "",
     [](const F&) -> std::string { return "opted out with shmguard.io/mode: skip"; }},
    {Check::kUnannotatedLeft, "unannotated-left", S::kInfo, "The policy leaves GPU pods without annotations as they are",
     "", "",
     [](const F&) -> std::string {
       return "no sizing annotations (shmguard.io/num-workers, shmguard.io/batch-bytes); the policy leaves such GPU "
              "pods as they are";
     }},
    {Check::kNamespaceOff, "namespace-off", S::kInfo, "The policy turns shmguard off for the namespace",
     "cluster_scoped", "namespace",
     [](const F& f) -> std::string {
       return f.Number("cluster_scoped") ? "cluster-scoped objects are off in the policy (its \"*\" rule)"
                                         : "namespace " + f.Value("namespace") + " is off in the policy";
     }},
    {Check::kNotAWorkload, "not-a-workload", S::kInfo, "Not a kind shmguard evaluates",
     "", "error",
     [](const F& f) -> std::string { return f.Value("error"); }},
    {Check::kNoPodTemplates, "no-pod-templates", S::kInfo, "A workload with no pod templates",
     "", "",
     [](const F&) -> std::string { return "no pod templates"; }},
    {Check::kDocumentUnreadable, "document-unreadable", S::kError, "A file or document that cannot be read as YAML or JSON",
     "", "error",
     [](const F& f) -> std::string { return f.Value("error"); }},
}};
// clang-format on

// Rows in the enum's order, so a check's row is its index. (That every row has its words is
// tested: a sanitized build does not take a lambda's address as a constant.)
constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kChecks.size(); ++i) {
    if (static_cast<size_t>(kChecks[i].check) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kChecks must list the checks in the order of enum Check");

}  // namespace shmguard::checks
