// The words of every check, as its catalogue row writes them from a finding's numbers and values:
// the one test that asserts a check's words.
#include <catch2/catch.hpp>
#include <set>

#include "core/checks/checks.h"
#include "core/plan/shm_plan.h"

namespace shmguard {
namespace {

std::string Words(const Finding& f) { return InfoOf(f.check).words(f); }

constexpr int64_t kMi = 1 << 20, kGi = 1ll << 30;

// The numbers of an unannotated pod's 1Gi floor for 2 procs (NCCL shm and base).
Finding Floor(Finding f) {
  return std::move(f.Num("floor_bytes", kGi)
                       .Num("floor_plan_bytes", 200 * kMi)
                       .Num("minimum_bytes", kGi)
                       .Num("procs", 2)
                       .Num("nccl_shm", 1)
                       .Num("nccl_proxy", 0));
}

struct Case {
  Finding finding;
  const char* text;
};

std::vector<Case> Cases() {
  Finding plan(Check::kShmPlan);
  plan.Num("procs", 4)
      .Num("workers", 8)
      .Num("prefetch_factor", 2)
      .Num("in_flight_extra", 2)
      .Num("batch_bytes", 160 * kMi)
      .Num("dataloader_bytes", 4 * 18 * 160 * kMi)
      .Num("nccl_bytes", 154206272)
      .Num("base_bytes", 64 * kMi)
      .Num("safety_ppm", 1'200'000)
      .Num("floor_applied", 0)
      .Num("required_bytes", 14078 * kMi)
      .Val("volume", "dshm")
      .Val("procs_source", "--nproc_per_node=4");
  Finding floor_plan(Check::kShmPlan);
  floor_plan.Num("procs", 2)
      .Num("workers", 0)
      .Num("nccl_bytes", 38551568)
      .Num("base_bytes", 64 * kMi)
      .Num("safety_ppm", 1'200'000)
      .Num("floor_applied", 1)
      .Num("required_bytes", kGi)
      .Val("volume", "dshm")
      .Val("procs_source", "2 GPUs in the pod");
  auto val = [](Check c, std::initializer_list<std::pair<std::string_view, std::string>> values) {
    Finding f(c);
    for (const auto& [k, v] : values) f.Val(k, v);
    return f;
  };
  return {
      {plan,
       "dshm needs 14078Mi = (4 procs × (8 workers × 2 + 2) × 160Mi + 147.1Mi NCCL + 64Mi base) × 1.2 (4 procs "
       "from --nproc_per_node=4)"},
      {floor_plan,
       "dshm needs 1Gi = (36.8Mi NCCL + 64Mi base) × 1.2, raised to the 1Gi floor for multi-GPU pods (2 procs from 2 "
       "GPUs in the pod)"},
      {std::move(Finding(Check::kSizedWithoutAnnotations)
                     .Num("required_bytes", 16 * kGi)
                     .Val("basis", "25% of the 64Gi memory limit")),
       "sized without DataLoader annotations: 16Gi = 25% of the 64Gi memory limit; set shmguard.io/num-workers and "
       "shmguard.io/batch-bytes for an exact size"},
      {std::move(Finding(Check::kSizedFromServerLaunch)
                     .Num("required_bytes", 2560 * kMi)
                     .Num("server_bytes", 2104 * kMi)
                     .Val("server", "vLLM")
                     .Val("launched_by", "vllm serve")
                     .Val("read", "--tensor-parallel-size=8")
                     .Val("terms", "160Mi executor broadcast queue + 8 × 240Mi worker response queues")
                     .Val("unbounded", "")),
       "sized for vLLM from its launch (vllm serve: --tensor-parallel-size=8): 2560Mi with its own segments 160Mi "
       "executor broadcast queue + 8 × 240Mi worker response queues; its launch flags change the size, not "
       "DataLoader annotations"},
      {std::move(Finding(Check::kSizedFromServerLaunch)
                     .Num("required_bytes", 2560 * kMi)
                     .Num("server_bytes", 6200 * kMi)
                     .Num("gpus", 8)
                     .Val("unchecked", "its multimodal cache is made")
                     .Val("server", "vLLM")
                     .Val("launched_by", "sh -c")
                     .Val("read", "-tp=$(TP), --mm-processor-cache-type=shm")
                     .Val("terms", "...")
                     .Val("unread", "-tp=$(TP)")),
       "sized for vLLM from its launch (sh -c: -tp=$(TP), --mm-processor-cache-type=shm): 2560Mi with its own "
       "segments ...; -tp=$(TP) names a variable the spec does not set: taken as the pod's 8 GPUs; its multimodal "
       "cache is made without checking /dev/shm's free space: a shortfall is a Bus error, not a refusal "
       "at start; its launch flags change the size, not DataLoader annotations"},
      {std::move(Finding(Check::kClaimsUnknown)
                     .Num("gpus", 8)
                     .Num("procs", 8)
                     .Val("claims", "ResourceClaimTemplate gpus")
                     .Val("procs_source", "--nproc_per_node=8")),
       "its GPUs through ResourceClaimTemplate gpus are unknown: sized for 8 GPUs from its launch "
       "(--nproc_per_node=8); give the audit the claims, or audit the pods on the cluster (--resource-claims)"},
      {Finding(Check::kReviewOverBudget),
       "the review took more CPU time than shmguard gives one (--review-cpu-budget-ms): it is left unsized"},
      {val(Check::kLaunchUnread, {{"error", "its command and args expand past 1048576 bytes"}}),
       "the launch is not read: its command and args expand past 1048576 bytes; the pod is sized as if it launched "
       "no inference server"},
      {std::move(Finding(Check::kSizedFromObservation)
                     .Num("required_bytes", 164 * kMi)
                     .Num("learned_bytes", 164 * kMi)
                     .Num("formula_bytes", 100 * kMi)
                     .Num("peak_bytes", 109 * kMi)
                     .Num("margin_ppm", 1'500'000)
                     .Num("runs", 1)
                     .Val("workload", "CronJob/nightly")
                     .Val("last_observed", "2026-11-25T10:00:00Z")),
       "sized from use: 164Mi = the observed peak 109Mi × 1.5 (CronJob/nightly, 1 run, last 2026-11-25T10:00:00Z)"},
      {std::move(Finding(Check::kSizedFromObservation)
                     .Num("required_bytes", kGi)
                     .Num("learned_bytes", 164 * kMi)
                     .Num("formula_bytes", kGi)
                     .Num("peak_bytes", 109 * kMi)
                     .Num("margin_ppm", 1'500'000)
                     .Num("runs", 3)
                     .Val("workload", "Job/train")
                     .Val("last_observed", "2026-11-25T10:00:00Z")),
       "sized from use: the observed peak 109Mi × 1.5 = 164Mi (Job/train, 3 runs, last 2026-11-25T10:00:00Z); the "
       "formula's 1Gi is larger and stays"},
      {Floor(std::move(Finding(Check::kSizedWithoutAnnotations).Num("from_bytes", 256 * kMi))),
       "sized without DataLoader annotations: /dev/shm raised from 256Mi to the 1Gi floor (NCCL shm and base for 2 "
       "procs = 200Mi, at least the 1Gi minimum); set shmguard.io/num-workers and shmguard.io/batch-bytes for an exact "
       "size"},
      {std::move(Finding(Check::kShmOverMemoryLimit)
                     .Num("required_bytes", 20 * kGi)
                     .Num("memory_limit_bytes", 16 * kGi)
                     .Val("volume", "dshm")
                     .Val("limit_source", "sum of container limits")),
       "memory limit 16Gi (sum of container limits) is below the 20Gi dshm needs: raise the limit or lower "
       "num-workers/prefetch-factor/batch size"},
      {std::move(Finding(Check::kShmOverMemoryLimit)
                     .Num("required_bytes", 10 * kGi)
                     .Num("memory_limit_bytes", 16 * kGi)
                     .Num("max_fraction_ppm", 500'000)
                     .Num("left_bytes", 6 * kGi)
                     .Val("volume", "/dev/shm")),
       "/dev/shm needs 10Gi is more than 0.5 of the memory limit 16Gi, leaving 6Gi for the processes: raise the limit "
       "or lower num-workers/prefetch-factor/batch size"},
      {Floor(std::move(Finding(Check::kShmOverMemoryLimit)
                           .Num("required_bytes", kGi)
                           .Num("memory_limit_bytes", 512 * kMi)
                           .Num("floor", 1)
                           .Val("limit_source", "sum of container limits"))),
       "no DataLoader annotations; /dev/shm needs at least the 1Gi floor (NCCL shm and base for 2 procs = 200Mi, at "
       "least the 1Gi minimum); memory limit 512Mi (sum of container limits) is below the 1Gi floor of a GPU pod: "
       "raise the memory limit"},
      {std::move(Finding(Check::kMemoryHeadroom)
                     .Num("memory_limit_bytes", 64 * kGi)
                     .Num("left_bytes", 48 * kGi)
                     .Val("volume", "dshm")),
       "memory limit 64Gi leaves 48Gi for the processes (dshm pages count against the limit)"},
      {val(Check::kMemoryLimitMissing, {{"limit_source", "container \"t\" has no memory limit"}, {"volume", "dshm"}}),
       "no memory limit (container \"t\" has no memory limit): dshm pages are bounded only by sizeLimit and node "
       "memory"},
      {std::move(
           Finding(Check::kSizeLimitOverMemoryLimit).Num("size_bytes", 128 * kGi).Num("memory_limit_bytes", 64 * kGi)),
       "sizeLimit 128Gi exceeds the memory limit 64Gi; the kubelet caps it at 64Gi"},
      {std::move(Finding(Check::kSizeLimitOverMemoryLimit)
                     .Num("size_bytes", 8 * kGi)
                     .Num("memory_limit_bytes", 4 * kGi)
                     .Num("compose", 1)),
       "shm_size 8Gi exceeds the memory limit 4Gi: filling /dev/shm past it gets the container OOM-killed"},
      {std::move(Finding(Check::kResizeBelowShm)
                     .Num("shm_bytes", 16 * kGi)
                     .Num("memory_limit_bytes", 20 * kGi)
                     .Num("was_memory_limit_bytes", 64 * kGi)
                     .Num("max_fraction_ppm", 500'000)
                     .Num("minimum_bytes", 32 * kGi)
                     .Val("volume", "dshm")
                     .Val("limit_source", "sum of container limits")
                     .Val("shm_source", "sizeLimit")),
       "this resize leaves the memory limit 20Gi (sum of container limits; was 64Gi) too small for dshm's 16Gi "
       "(sizeLimit): /dev/shm's pages count against the limit, and may take at most 0.5 of it; keep the limit at 32Gi "
       "or more, or the pod is OOM-killed when /dev/shm fills"},
      {std::move(Finding(Check::kResizeBelowShm)
                     .Num("shm_bytes", 16 * kGi)
                     .Num("memory_limit_bytes", 20 * kGi)
                     .Num("max_fraction_ppm", 500'000)
                     .Num("minimum_bytes", 32 * kGi)
                     .Val("volume", "dshm")
                     .Val("limit_source", "pod-level limit")
                     .Val("shm_source", "shmguard.io/plan")),
       "the memory limit 20Gi (pod-level limit) is too small for dshm's 16Gi (shmguard.io/plan): /dev/shm's pages "
       "count "
       "against the limit, and may take at most 0.5 of it; keep the limit at 32Gi or more, or the pod is OOM-killed "
       "when "
       "/dev/shm fills"},
      {std::move(
           Finding(Check::kShmBelowNeed).Num("required_bytes", 14078 * kMi).Val("current", "64Mi (container default)")),
       "/dev/shm is 64Mi (container default), below the 14078Mi needed"},
      {Floor(val(Check::kShmBelowNeed, {{"current", "emptyDir Memory 256Mi"}})),
       "/dev/shm is emptyDir Memory 256Mi, below the 1Gi floor (NCCL shm and base for 2 procs = 200Mi, at least the "
       "1Gi minimum)"},
      {std::move(Finding(Check::kShmBelowNeed).Num("required_bytes", 2 * kGi).Val("containers", "sidecar, logger")),
       "/dev/shm is not mounted in sidecar, logger: they get the container default 64Mi, below the 2Gi needed"},
      {std::move(Finding(Check::kShmBelowNeed)
                     .At(Severity::kError)
                     .Num("required_bytes", 12365 * kMi)
                     .Num("unpatched", 1)
                     .Num("operator_shm", 1)
                     .Val("current", "emptyDir Memory 8Gi (KubeRay's shared-mem)")
                     .Val("kind", "RayCluster")),
       "/dev/shm is emptyDir Memory 8Gi (KubeRay's shared-mem), below the 12365Mi needed; shmguard does not patch a "
       "RayCluster: raise the Ray container's memory limit (KubeRay sizes /dev/shm to it) or mount an emptyDir "
       "{medium: Memory} of that size at /dev/shm"},
      {std::move(Finding(Check::kShmSufficient)
                     .Num("required_bytes", 4 * kGi)
                     .Val("current", "emptyDir Memory 8Gi")
                     .Val("kind", "TrainJob")),
       "/dev/shm emptyDir Memory 8Gi covers the 4Gi needed (shmguard does not patch a TrainJob)"},
      {Floor(val(Check::kShmSufficient, {{"current", "emptyDir Memory 2Gi"}})),
       "/dev/shm emptyDir Memory 2Gi covers the 1Gi floor (NCCL shm and base for 2 procs = 200Mi, at least the 1Gi "
       "minimum)"},
      {val(Check::kShmNotMemoryBacked, {{"mount", "hostPath /dev/shm"}}),
       "/dev/shm is mounted from hostPath /dev/shm; shmguard only sizes an emptyDir {medium: Memory}: replace it"},
      {val(Check::kShmNotMemoryBacked, {{"mount", "hostPath /dev/shm"}}).At(Severity::kInfo),
       "/dev/shm is mounted from hostPath /dev/shm; without DataLoader annotations shmguard leaves it as it is"},
      {std::move(Finding(Check::kShmPatchedAtCreation)
                     .Num("required_bytes", 32 * kGi)
                     .Val("current", "64Mi (container default)")
                     .Val("kind", "TrainJob")),
       "/dev/shm is 64Mi (container default), below the 32Gi needed: shmguard does not patch a TrainJob; its pods are "
       "patched when they are created"},
      {std::move(Finding(Check::kShmPatchedAtCreation)
                     .Num("required_bytes", 4 * kGi)
                     .Val("unknown", "ClusterTrainingRuntime x is not in the input")),
       "needs /dev/shm of 4Gi; what its pods have is unknown (ClusterTrainingRuntime x is not in the input); shmguard "
       "patches them when they are created if they have less"},
      {val(Check::kShmReadOnly, {{"containers", "trainer, logger"}}),
       "/dev/shm is mounted readOnly in trainer, logger: DataLoader workers and NCCL cannot create their segments "
       "there "
       "(EROFS); remove readOnly"},
      {val(Check::kMpsShm, {{"containers", "infer"}, {"resource", "nvidia.com/gpu.shared"}})
           .Num("required_bytes", 2 * kGi),
       "infer requests nvidia.com/gpu.shared, served through MPS (policy mpsResources): the device plugin mounts the "
       "MPS daemon's /dev/shm there and a dshm would hide it, so none is added (the pod needs 2Gi)"},
      {val(Check::kIpcLockMissing,
           {{"containers", "trainer"}, {"reason", "requests rdma/hca_shared_devices_a"}, {"user", "runAsUser 0"}}),
       "no IPC_LOCK in trainer, which registers host memory for RDMA (requests rdma/hca_shared_devices_a) as root "
       "(runAsUser 0): registration fails past RLIMIT_MEMLOCK"},
      {val(Check::kIpcLockMissing,
           {{"containers", "a, b"}, {"reason", "env NCCL_NET=IB"}, {"user", "runAsUser unset"}}),
       "no IPC_LOCK in a, b, which registers host memory for RDMA (env NCCL_NET=IB) as root unless its image sets a "
       "user (runAsUser unset): registration fails past RLIMIT_MEMLOCK"},
      {val(Check::kIpcLockMissing, {{"containers", "trainer"}, {"reason", "policy ipcLock: always"}}),
       "no IPC_LOCK in trainer (policy ipcLock: always)"},
      {Finding(Check::kIpcLockMissing, "/services/train/ulimits/memlock")
           .Val("containers", "train")
           .Val("reason", "devices /dev/infiniband/uverbs0"),
       "locked memory of train is limited (ulimits.memlock), and it registers host memory for RDMA (devices "
       "/dev/infiniband/uverbs0), which fails past that limit"},
      {Finding(Check::kIpcLockMissing, "/services/train/ulimits/memlock")
           .Val("containers", "train")
           .Val("reason", "policy ipcLock: all"),
       "locked memory of train is limited (ulimits.memlock) and policy ipcLock: all raises it"},
      {val(Check::kIpcLockNonRoot,
           {{"containers", "trainer"}, {"reason", "requests vpc.amazonaws.com/efa"}, {"user", "runAsUser 1000"}}),
       "trainer registers host memory for RDMA (requests vpc.amazonaws.com/efa) as non-root (runAsUser 1000), where "
       "IPC_LOCK never takes effect: raise RLIMIT_MEMLOCK instead (the node's container runtime with "
       "LimitMEMLOCK=infinity; securityContext.ulimits is in no Kubernetes release through 1.37)"},
      {std::move(Finding(Check::kHostIpcMissing).Num("gpus", 8)),
       "hostIPC: true (policy hostIPC: always): the pod joins the node's IPC namespace (System V IPC, POSIX message "
       "queues), which NCCL does not use; its /dev/shm stays the pod's own"},
      {val(Check::kHostIpcUnavailable, {{"kind", "Workflow"}}),
       "hostIPC not set: a Workflow has no hostIPC field for its pods"},
      {val(Check::kPodSecurityLimitsPatch, {{"field", "hostIPC"}, {"level", "baseline"}}),
       "hostIPC not set: Pod Security baseline forbids it"},
      {val(Check::kPodSecurityLimitsPatch, {{"field", "IPC_LOCK"}, {"level", "restricted"}}),
       "IPC_LOCK not added: Pod Security restricted forbids it"},
      {val(Check::kAnnotationInvalid, {{"annotation", "shmguard.io/num-workers"}, {"error", "must be a whole number"}}),
       "annotation shmguard.io/num-workers: must be a whole number"},
      {Finding(Check::kAnnotationsRequired),
       "GPU pods in this namespace must declare shmguard.io/num-workers and shmguard.io/batch-bytes (DataLoader "
       "num_workers and bytes per batch)"},
      {val(Check::kObjectInvalid, {{"where", "/spec/volumes"}, {"error", "must be a list"}}),
       "/spec/volumes: must be a list"},
      {val(Check::kObjectInvalid, {{"error", "no kind"}}), "no kind"},
      {val(Check::kTrainjobAnnotationsIgnored,
           {{"annotations", "shmguard.io/num-workers"}, {"api", "podTemplateOverrides"}}),
       "shmguard.io/num-workers on the TrainJob's own metadata never reach its pods and are not used: put them in "
       "spec.podTemplateOverrides[].metadata.annotations (Trainer v2.1)"},
      {std::move(Finding(Check::kTrainjobRuntime).Num("found", 1).Val("runtime", "ClusterTrainingRuntime torch")),
       "evaluated as the pods of ClusterTrainingRuntime torch (in this input) with the TrainJob's trainer settings and "
       "patches"},
      {val(Check::kTrainjobRuntime, {{"runtime", "ClusterTrainingRuntime torch"}}),
       "ClusterTrainingRuntime torch is not in the input: evaluated from what the TrainJob states; audit it together "
       "with its runtime for the runtime's /dev/shm"},
      {std::move(Finding(Check::kServingRuntime).Num("found", 1).Val("runtime", "ServingRuntime vllm")),
       "evaluated as the pods KServe builds from ServingRuntime vllm (in this input) and the predictor"},
      {val(Check::kServingRuntime, {{"runtime", "the runtime KServe selects for model format vLLM"}}),
       "the runtime KServe selects for model format vLLM is not in the input: the server's command and the runtime's "
       "volumes come from it; audit them together for the predictor's /dev/shm and server"},
      {Floor(Finding(Check::kComposeShmDefault)),
       "the service has Docker's default 64Mi /dev/shm (no shm_size), below the 1Gi floor (NCCL shm and base for 2 "
       "procs = 200Mi, at least the 1Gi minimum)"},
      {std::move(Finding(Check::kComposeShmDefault).Num("required_bytes", 3347 * kMi)),
       "the service has Docker's default 64Mi /dev/shm (no shm_size), below the 3347Mi needed"},
      {std::move(Finding(Check::kComposeIpcHost).Num("required_bytes", 2 * kGi)),
       "ipc: host: the service uses the host's /dev/shm, which Docker does not size (it ignores shm_size then); the "
       "host needs 2Gi free there"},
      {Finding(Check::kComposeGpuCountUnknown),
       "the service reserves every GPU of the host (count: all or no count), a number shmguard cannot know: sized for "
       "1 GPU; set the label shmguard.io/procs-per-pod to its processes"},
      {val(Check::kNcclP2pDisabled, {{"source", "container \"t\""}}),
       "NCCL_P2P_DISABLE=1 (container \"t\"): NCCL moves intra-node traffic through /dev/shm instead of GPU "
       "peer-to-peer"},
      {val(Check::kNcclShmDisabled, {{"source", "container \"t\""}}),
       "NCCL_SHM_DISABLE=1 (container \"t\"): NCCL's shared-memory transport is off, so no NCCL shm term"},
      {std::move(
           Finding(Check::kProcsGpusMismatch).Num("procs", 2).Num("gpus", 8).Val("procs_source", "--nproc_per_node=2")),
       "2 processes per pod (--nproc_per_node=2) but 8 GPUs: 6 GPUs stay idle"},
      {std::move(Finding(Check::kProcsGpusMismatch).Num("procs", 8).Val("procs_source", "annotation").Num("gpus", 4)),
       "8 processes per pod (annotation) but 4 GPUs: several processes share a GPU"},
      {std::move(Finding(Check::kSingleGpuPods).Num("pods", 4).Val("pods_source", "Job parallelism 4")),
       "4 pods with 1 GPU each train together (Job parallelism 4): NCCL carries all their traffic over the network "
       "(via NET), where one pod with several GPUs would use NVLink or PCIe P2P (via P2P or SHM); neither layout "
       "always wins — on p4d.24xlarge with EFA, 1 pod × 4 GPUs took 30:00 and 4 pods × 1 GPU 28:15"},
      {Finding(Check::kNoGpus), "no GPUs and no sizing annotations"},
      {Finding(Check::kOptedOut), "opted out with shmguard.io/mode: skip"},
      {Finding(Check::kUnannotatedLeft),
       "no sizing annotations (shmguard.io/num-workers, shmguard.io/batch-bytes); the policy leaves such GPU pods as "
       "they are"},
      {val(Check::kNamespaceOff, {{"namespace", "kube-system"}}), "namespace kube-system is off in the policy"},
      {std::move(Finding(Check::kNamespaceOff).Num("cluster_scoped", 1)),
       "cluster-scoped objects are off in the policy (its \"*\" rule)"},
      {val(Check::kNotAWorkload, {{"error", "v1 Service is not a workload shmguard sizes"}}),
       "v1 Service is not a workload shmguard sizes"},
      {Finding(Check::kNoPodTemplates), "no pod templates"},
      {val(Check::kDocumentUnreadable, {{"error", "a.yaml:3: mapping values are not allowed here"}}),
       "a.yaml:3: mapping values are not allowed here"},
  };
}

TEST_CASE("A check's row words its findings from their numbers and values", "[checks]") {
  for (const CheckInfo& c : Catalogue()) {
    CAPTURE(c.id);
    REQUIRE(c.words != nullptr);  // a row written without its words
  }
  std::set<Check> worded;
  for (const auto& c : Cases()) {
    CAPTURE(c.finding.id());
    CHECK(Words(c.finding) == c.text);
    worded.insert(c.finding.check);
  }
  CHECK(worded.size() == Catalogue().size());  // every check, at least once
}

// Whatever a check's findings carry, its wording reads only the names its row declares (a read of
// another throws): with none of them set, with all, with each alone and with all but each.
TEST_CASE("A check's words read only the numbers and values its row declares", "[checks]") {
  for (const CheckInfo& c : Catalogue()) {
    CAPTURE(c.id);
    std::vector<std::string_view> names = c.NumberNames();
    const size_t numbers = names.size();
    for (std::string_view v : c.ValueNames()) names.push_back(v);
    auto with = [&](auto set) {
      Finding f(c.check);
      for (size_t i = 0; i < names.size(); ++i) {
        if (!set(i)) continue;
        if (i < numbers) {
          f.Num(names[i], 3);
        } else {
          f.Val(names[i], "x");
        }
      }
      return f;
    };
    CHECK_NOTHROW(Words(with([](size_t) { return false; })));
    CHECK_FALSE(Words(with([](size_t) { return true; })).empty());
    for (size_t k = 0; k < names.size(); ++k) {
      CAPTURE(names[k]);
      CHECK_NOTHROW(Words(with([k](size_t i) { return i == k; })));
      CHECK_NOTHROW(Words(with([k](size_t i) { return i != k; })));
    }
  }
}
TEST_CASE("ShmPlanFinding carries the plan's terms for its words", "[checks]") {
  SizingConstants k;
  auto plan = PlanShm({8, 2, 160 * kMi, 4, 1}, k);
  REQUIRE(plan.has_value());
  Finding f = ShmPlanFinding(*plan, k, "dshm", "--nproc_per_node=4", "/metadata/annotations");
  CHECK(f.check == Check::kShmPlan);
  CHECK(f.pointer == "/metadata/annotations");
  CHECK(f.Number("required_bytes") == 14078 * kMi);
  CHECK(Words(f) == Words(Cases()[0].finding));
}

}  // namespace
}  // namespace shmguard
