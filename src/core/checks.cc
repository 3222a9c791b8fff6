// The catalogue of checks (one table) and Finding's accessors.
#include "shmguard/checks.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace shmguard {
namespace {

using S = Severity;

// One check per row: its ID (stable: tools and exemptions name it), default severity, title, and
// the names of the numbers and of the values its findings carry (docs/checks.md lists the same
// under the check's heading; its wording, in io/finding_text.cc, reads no other).
// clang-format off
constexpr std::array<CheckInfo, 34> kChecks = {{
    {Check::kShmPlan, "shm-plan", S::kInfo, "The /dev/shm size the pod needs, and the arithmetic behind it",
     "required_bytes procs workers prefetch_factor in_flight_extra batch_bytes dataloader_bytes nccl_bytes base_bytes safety_ppm floor_applied", "volume procs_source"},
    {Check::kSizedWithoutAnnotations, "sized-without-annotations", S::kWarning, "A GPU pod sized without DataLoader annotations: an estimate",
     "required_bytes from_bytes floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "basis"},
    {Check::kSizedFromObservation, "sized-from-observation", S::kInfo, "Sized from what the workload's pods used: the observed peak times the margin",
     "required_bytes learned_bytes formula_bytes peak_bytes margin_ppm runs", "workload last_observed last_pod"},
    {Check::kShmOverMemoryLimit, "shm-over-memory-limit", S::kError, "The /dev/shm needed does not fit the memory limit",
     "required_bytes memory_limit_bytes max_fraction_ppm left_bytes floor compose floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "volume limit_source"},
    {Check::kMemoryHeadroom, "memory-headroom", S::kInfo, "What the memory limit leaves the processes once /dev/shm is full",
     "memory_limit_bytes left_bytes floor compose", "volume limit_source"},
    {Check::kMemoryLimitMissing, "memory-limit-missing", S::kWarning, "No memory limit: /dev/shm pages are bounded only by the node",
     "floor compose", "volume limit_source"},
    {Check::kSizeLimitOverMemoryLimit, "sizelimit-over-memory-limit", S::kWarning, "A /dev/shm size above the memory limit, which caps it",
     "size_bytes memory_limit_bytes compose", ""},
    {Check::kShmBelowNeed, "shm-below-need", S::kWarning, "/dev/shm is smaller than the pod needs",
     "required_bytes current_bytes unpatched operator_shm floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "current containers kind"},
    {Check::kShmSufficient, "shm-sufficient", S::kInfo, "/dev/shm already covers what the pod needs",
     "required_bytes learned_bytes host_ipc floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "current kind"},
    {Check::kShmNotMemoryBacked, "shm-not-memory-backed", S::kError, "/dev/shm is mounted from something other than a memory emptyDir",
     "", "mount"},
    {Check::kShmPatchedAtCreation, "shm-patched-at-creation", S::kInfo, "Not patched here: its pods are patched when they are created",
     "required_bytes", "current kind unknown"},
    {Check::kIpcLockMissing, "ipc-lock-missing", S::kWarning, "A GPU container cannot lock memory for pin_memory (no IPC_LOCK)",
     "", "containers"},
    {Check::kHostIpcMissing, "host-ipc-missing", S::kWarning, "A multi-GPU pod without hostIPC",
     "gpus", ""},
    {Check::kHostIpcUnavailable, "host-ipc-unavailable", S::kInfo, "The kind has no hostIPC field for its pods",
     "", "kind"},
    {Check::kPodSecurityLimitsPatch, "pod-security-limits-patch", S::kWarning, "Pod Security keeps hostIPC or IPC_LOCK out of the patch",
     "", "level field"},
    {Check::kAnnotationInvalid, "annotation-invalid", S::kError, "A shmguard.io/ annotation is malformed",
     "", "annotation error"},
    {Check::kAnnotationsRequired, "annotations-required", S::kError, "The namespace requires DataLoader annotations on GPU pods",
     "", ""},
    {Check::kObjectInvalid, "object-invalid", S::kError, "A field shmguard reads has the wrong type or value",
     "", "where error"},
    {Check::kTrainjobAnnotationsIgnored, "trainjob-annotations-ignored", S::kWarning, "shmguard.io/ annotations on a TrainJob never reach its pods",
     "", "annotations api"},
    {Check::kTrainjobRuntime, "trainjob-runtime", S::kInfo, "How a TrainJob was read: with its runtime, or from what it states",
     "found", "runtime"},
    {Check::kComposeShmDefault, "compose-shm-default", S::kWarning, "A Compose service relies on Docker's 64 MiB /dev/shm",
     "required_bytes floor_bytes floor_plan_bytes minimum_bytes nccl_proxy nccl_shm procs", "current"},
    {Check::kComposeIpcHost, "compose-ipc-host", S::kInfo, "A Compose service uses the host's /dev/shm (ipc: host)",
     "required_bytes", ""},
    {Check::kComposeGpuCountUnknown, "compose-gpu-count-unknown", S::kWarning, "A Compose service reserves every GPU of the host: a count shmguard cannot know",
     "", ""},
    {Check::kNcclP2pDisabled, "nccl-p2p-disabled", S::kInfo, "NCCL_P2P_DISABLE=1: intra-node NCCL traffic goes through /dev/shm",
     "", "source"},
    {Check::kNcclShmDisabled, "nccl-shm-disabled", S::kInfo, "NCCL_SHM_DISABLE=1: no NCCL shared-memory term",
     "", "source"},
    {Check::kProcsGpusMismatch, "procs-gpus-mismatch", S::kWarning, "Processes per pod differ from the GPUs it requests",
     "procs gpus", "procs_source"},
    {Check::kSingleGpuPods, "single-gpu-pods", S::kInfo, "A job of several one-GPU pods: NCCL crosses the network between them",
     "pods", "pods_source"},
    {Check::kNoGpus, "no-gpus", S::kInfo, "No GPUs and no sizing annotations: nothing to size",
     "", ""},
    {Check::kOptedOut, "opted-out", S::kInfo, "Opted out with shmguard.io/mode: skip",
     "", ""},
    {Check::kUnannotatedLeft, "unannotated-left", S::kInfo, "The policy leaves GPU pods without annotations as they are",
     "", ""},
    {Check::kNamespaceOff, "namespace-off", S::kInfo, "The policy turns shmguard off for the namespace",
     "cluster_scoped", "namespace"},
    {Check::kNotAWorkload, "not-a-workload", S::kInfo, "Not a kind shmguard evaluates",
     "", "error"},
    {Check::kNoPodTemplates, "no-pod-templates", S::kInfo, "A workload with no pod templates",
     "", ""},
    {Check::kDocumentUnreadable, "document-unreadable", S::kError, "A file or document that cannot be read as YAML or JSON",
     "", "error"},
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

// The first name of a space-separated list, taken off `rest`.
std::string_view NextName(std::string_view& rest) {
  const size_t end = std::min(rest.find(' '), rest.size());
  const std::string_view name = rest.substr(0, end);
  rest.remove_prefix(std::min(end + 1, rest.size()));
  return name;
}

// Whether the space-separated list names name.
bool Names(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    if (NextName(list) == name) return true;
  }
  return false;
}

std::vector<std::string_view> Split(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) out.push_back(NextName(list));
  return out;
}

// name must be one of the check's numbers (or values): a finding that sets or reads another is a
// bug of the code that makes or words it, caught by the tests that run it.
void Require(Check c, bool number, std::string_view name) {
  const CheckInfo& info = InfoOf(c);
  if (number ? info.CarriesNumber(name) : info.CarriesValue(name)) return;
  throw std::logic_error("check " + std::string(info.id) + " carries no " + (number ? "number" : "value") + " \"" +
                         std::string(name) + "\" (its row in src/core/checks.cc)");
}

}  // namespace

bool CheckInfo::CarriesNumber(std::string_view name) const { return Names(numbers, name); }
bool CheckInfo::CarriesValue(std::string_view name) const { return Names(values, name); }
std::vector<std::string_view> CheckInfo::NumberNames() const { return Split(numbers); }
std::vector<std::string_view> CheckInfo::ValueNames() const { return Split(values); }

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
  Require(check, true, name);
  if (numbers.empty()) numbers.reserve(4);  // most findings carry one to four
  numbers.emplace_back(name, v);
  return *this;
}

Finding& Finding::Val(std::string_view name, std::string v) {
  Require(check, false, name);
  if (values.empty()) values.reserve(2);
  values.emplace_back(name, std::move(v));
  return *this;
}

Finding& Finding::At(Severity s) {
  severity = s;
  return *this;
}

int64_t Finding::Number(std::string_view name) const {
  Require(check, true, name);
  for (const auto& [n, v] : numbers) {
    if (n == name) return v;
  }
  return 0;
}

bool Finding::HasNumber(std::string_view name) const {
  Require(check, true, name);
  for (const auto& [n, v] : numbers) {
    if (n == name) return true;
  }
  return false;
}

const std::string& Finding::Value(std::string_view name) const {
  Require(check, false, name);
  for (const auto& [n, v] : values) {
    if (n == name) return v;
  }
  return kEmpty;
}

}  // namespace shmguard
