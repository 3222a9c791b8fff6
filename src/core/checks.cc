// The catalogue of checks (one table) and Finding's accessors.
#include "shmguard/checks.h"

#include <array>

namespace shmguard {
namespace {

using S = Severity;

// One check per line. The IDs are stable: tools and exemptions name them.
// clang-format off
constexpr std::array<CheckInfo, 34> kChecks = {{
    {Check::kShmPlan, "shm-plan", S::kInfo, "The /dev/shm size the pod needs, and the arithmetic behind it"},
    {Check::kSizedWithoutAnnotations, "sized-without-annotations", S::kWarning, "A GPU pod sized without DataLoader annotations: an estimate"},
    {Check::kSizedFromObservation, "sized-from-observation", S::kInfo, "Sized from what the workload's pods used: the observed peak times the margin"},
    {Check::kShmOverMemoryLimit, "shm-over-memory-limit", S::kError, "The /dev/shm needed does not fit the memory limit"},
    {Check::kMemoryHeadroom, "memory-headroom", S::kInfo, "What the memory limit leaves the processes once /dev/shm is full"},
    {Check::kMemoryLimitMissing, "memory-limit-missing", S::kWarning, "No memory limit: /dev/shm pages are bounded only by the node"},
    {Check::kSizeLimitOverMemoryLimit, "sizelimit-over-memory-limit", S::kWarning, "A /dev/shm size above the memory limit, which caps it"},
    {Check::kShmBelowNeed, "shm-below-need", S::kWarning, "/dev/shm is smaller than the pod needs"},
    {Check::kShmSufficient, "shm-sufficient", S::kInfo, "/dev/shm already covers what the pod needs"},
    {Check::kShmNotMemoryBacked, "shm-not-memory-backed", S::kError, "/dev/shm is mounted from something other than a memory emptyDir"},
    {Check::kShmPatchedAtCreation, "shm-patched-at-creation", S::kInfo, "Not patched here: its pods are patched when they are created"},
    {Check::kIpcLockMissing, "ipc-lock-missing", S::kWarning, "A GPU container cannot lock memory for pin_memory (no IPC_LOCK)"},
    {Check::kHostIpcMissing, "host-ipc-missing", S::kWarning, "A multi-GPU pod without hostIPC"},
    {Check::kHostIpcUnavailable, "host-ipc-unavailable", S::kInfo, "The kind has no hostIPC field for its pods"},
    {Check::kPodSecurityLimitsPatch, "pod-security-limits-patch", S::kWarning, "Pod Security keeps hostIPC or IPC_LOCK out of the patch"},
    {Check::kAnnotationInvalid, "annotation-invalid", S::kError, "A shmguard.io/ annotation is malformed"},
    {Check::kAnnotationsRequired, "annotations-required", S::kError, "The namespace requires DataLoader annotations on GPU pods"},
    {Check::kObjectInvalid, "object-invalid", S::kError, "A field shmguard reads has the wrong type or value"},
    {Check::kTrainjobAnnotationsIgnored, "trainjob-annotations-ignored", S::kWarning, "shmguard.io/ annotations on a TrainJob never reach its pods"},
    {Check::kTrainjobRuntime, "trainjob-runtime", S::kInfo, "How a TrainJob was read: with its runtime, or from what it states"},
    {Check::kComposeShmDefault, "compose-shm-default", S::kWarning, "A Compose service relies on Docker's 64 MiB /dev/shm"},
    {Check::kComposeIpcHost, "compose-ipc-host", S::kInfo, "A Compose service uses the host's /dev/shm (ipc: host)"},
    {Check::kComposeGpuCountUnknown, "compose-gpu-count-unknown", S::kWarning, "A Compose service reserves every GPU of the host: a count shmguard cannot know"},
    {Check::kNcclP2pDisabled, "nccl-p2p-disabled", S::kInfo, "NCCL_P2P_DISABLE=1: intra-node NCCL traffic goes through /dev/shm"},
    {Check::kNcclShmDisabled, "nccl-shm-disabled", S::kInfo, "NCCL_SHM_DISABLE=1: no NCCL shared-memory term"},
    {Check::kProcsGpusMismatch, "procs-gpus-mismatch", S::kWarning, "Processes per pod differ from the GPUs it requests"},
    {Check::kSingleGpuPods, "single-gpu-pods", S::kInfo, "A job of several one-GPU pods: NCCL crosses the network between them"},
    {Check::kNoGpus, "no-gpus", S::kInfo, "No GPUs and no sizing annotations: nothing to size"},
    {Check::kOptedOut, "opted-out", S::kInfo, "Opted out with shmguard.io/mode: skip"},
    {Check::kUnannotatedLeft, "unannotated-left", S::kInfo, "The policy leaves GPU pods without annotations as they are"},
    {Check::kNamespaceOff, "namespace-off", S::kInfo, "The policy turns shmguard off for the namespace"},
    {Check::kNotAWorkload, "not-a-workload", S::kInfo, "Not a kind shmguard evaluates"},
    {Check::kNoPodTemplates, "no-pod-templates", S::kInfo, "A workload with no pod templates"},
    {Check::kDocumentUnreadable, "document-unreadable", S::kError, "A file or document that cannot be read as YAML or JSON"},
}};
// clang-format on

// Rows in the enum's order, so a check's row is its index.
constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kChecks.size(); ++i) {
    if (static_cast<size_t>(kChecks[i].check) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kChecks must list the checks in the order of enum Check");

const std::string kEmpty;

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "error";
}

std::optional<Severity> ParseSeverity(std::string_view name) { return FindByName(kSeverities, SeverityName, name); }

std::span<const CheckInfo> Catalogue() { return kChecks; }

const CheckInfo& InfoOf(Check c) { return kChecks[static_cast<size_t>(c)]; }

std::optional<Check> FindCheck(std::string_view id) {
  for (const auto& info : kChecks) {
    if (info.id == id) return info.check;
  }
  return std::nullopt;
}

Finding::Finding(Check c, std::string pointer_)
    : check(c), severity(InfoOf(c).severity), pointer(std::move(pointer_)) {}

Finding& Finding::Num(std::string_view name, int64_t v) {
  if (numbers.empty()) numbers.reserve(4);  // most findings carry one to four
  numbers.emplace_back(name, v);
  return *this;
}

Finding& Finding::Val(std::string_view name, std::string v) {
  if (values.empty()) values.reserve(2);
  values.emplace_back(name, std::move(v));
  return *this;
}

Finding& Finding::At(Severity s) {
  severity = s;
  return *this;
}

int64_t Finding::Number(std::string_view name) const {
  for (const auto& [n, v] : numbers) {
    if (n == name) return v;
  }
  return 0;
}

bool Finding::HasNumber(std::string_view name) const {
  for (const auto& [n, v] : numbers) {
    if (n == name) return true;
  }
  return false;
}

const std::string& Finding::Value(std::string_view name) const {
  for (const auto& [n, v] : values) {
    if (n == name) return v;
  }
  return kEmpty;
}

}  // namespace shmguard
