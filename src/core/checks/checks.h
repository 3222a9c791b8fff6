// The catalogue of checks: everything shmguard reports is a finding of one of these, with a
// stable kebab-case ID, a default severity, a section in docs/checks.md and its words, all in one
// row. Findings are values (Finding): the check, where (pod template, JSON pointer) and the
// numbers; the core never puts them in words, the edges do, through the row (io/finding_text.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmguard {

// Ordered: a check at or above --fail-on counts.
// The one of `values` whose `name` is `text` ("enforce" -> NamespaceMode::kEnforce), or nullopt:
// how every enum of the core is read back from its name.
template <typename E, size_t N>
std::optional<E> FindByName(const E (&values)[N], const char* (*name)(E), std::string_view text) {
  for (E v : values) {
    if (text == name(v)) return v;
  }
  return std::nullopt;
}

// Ordered by severity: a workload's verdict is the most severe of its pods'.
enum class Verdict {
  kSkip,   // not shmguard's business: not a workload, opted out, namespace off
  kOk,     // nothing to change
  kPatch,  // the patch fixes it
  kDeny,   // patching cannot fix it; the reasons say what to change
};
const char* VerdictName(Verdict v);  // "skip", "ok", "patch", "deny"

// How much is recorded. kAll: every finding and the patch's change descriptions (the audit,
// `shmguard plan`, /validate). kProblems: what a /mutate answer can carry — warnings and errors;
// no info findings, no change descriptions. Verdicts, plans and patches are the same either
// way.
enum class Detail { kAll, kProblems };

enum class Severity { kInfo, kWarning, kError };
inline constexpr Severity kSeverities[] = {Severity::kInfo, Severity::kWarning, Severity::kError};
const char* SeverityName(Severity s);  // "info", "warning", "error"
// "info", "warning", "error" -> the severity; nullopt for anything else.
std::optional<Severity> ParseSeverity(std::string_view name);

enum class Check {
  // What the size needs and why (the arithmetic, the estimate, the memory limit).
  kShmPlan,
  kSizedWithoutAnnotations,
  kSizedFromServerLaunch,
  kLaunchUnread,
  kClaimsUnknown,
  kSizedFromObservation,
  kShmOverMemoryLimit,
  kMemoryHeadroom,
  kMemoryLimitMissing,
  kSizeLimitOverMemoryLimit,
  kResizeBelowShm,
  // What the pod has against what it needs.
  kShmBelowNeed,
  kShmSufficient,
  kShmNotMemoryBacked,
  kShmReadOnly,
  kShmPatchedAtCreation,
  kMpsShm,
  kIpcLockMissing,
  kIpcLockNonRoot,
  kHostIpcMissing,
  kHostIpcUnavailable,
  kPodSecurityLimitsPatch,
  // Inputs.
  kAnnotationInvalid,
  kAnnotationsRequired,
  kObjectInvalid,
  kReviewOverBudget,
  kTrainjobAnnotationsIgnored,
  kTrainjobRuntime,
  kServingRuntime,
  // Docker Compose.
  kComposeShmDefault,
  kComposeIpcHost,
  kComposeGpuCountUnknown,
  // NCCL and topology.
  kNcclP2pDisabled,
  kNcclShmDisabled,
  kProcsGpusMismatch,
  kSingleGpuPods,
  // Not sized, and why.
  kNoGpus,
  kOptedOut,
  kUnannotatedLeft,
  kNamespaceOff,
  kNotAWorkload,
  kNoPodTemplates,
  kDocumentUnreadable,
};

struct Finding;

struct CheckInfo {
  Check check;
  std::string_view id;     // "shm-over-memory-limit": stable; docs/checks.md#shm-over-memory-limit
  Severity severity;       // the default; a finding may carry another (shm-below-need is an error
                           // for a kind shmguard does not patch, a warning where the patch fixes it)
  std::string_view title;  // one line, for SARIF rules and the docs' headings
  // The names of the numbers and of the values its findings carry, space-separated; its section
  // of docs/checks.md lists the same. Setting or reading any other is a bug (std::logic_error).
  std::string_view numbers;
  std::string_view values;
  // Its words: the finding in one sentence, from its numbers and values and no others, e.g.
  // "hostIPC is not set on a pod with 4 GPUs". For the edges; the core never calls it.
  std::string (*words)(const Finding&);
  bool CarriesNumber(std::string_view name) const;
  bool CarriesValue(std::string_view name) const;
  // Those names, one each: {"required_bytes", "procs", ...}.
  std::vector<std::string_view> NumberNames() const;
  std::vector<std::string_view> ValueNames() const;
};

// Every check, in the order above.
std::span<const CheckInfo> Catalogue();
const CheckInfo& InfoOf(Check c);
// "shm-plan" -> Check::kShmPlan; nullopt for an unknown ID.
std::optional<Check> FindCheck(std::string_view id);

// One finding: a check, where it is, and its numbers and values (each check's section of
// docs/checks.md names the ones it fills).
struct Finding {
  Check check;
  Severity severity;
  std::string pod;  // the pod template's label ("pod", "replicatedJob workers"); "" for the object
  // RFC 6901 pointer into the object of the field at fault, also when it is missing (hostIPC,
  // a container's securityContext): a locator shows the nearest parent that is written.
  std::string pointer;
  // Exact numbers by name: "required_bytes", "memory_limit_bytes", "procs", "max_fraction_ppm"...
  // Only those the check's CheckInfo::numbers names.
  std::vector<std::pair<std::string_view, int64_t>> numbers;
  // Texts by name, quoted from the object or naming a source: "current" ("emptyDir Memory 1Gi"),
  // "procs_source" ("env PET_NPROC_PER_NODE=4"), "kind", "level", "error" (an input error's own
  // message). Only those the check's CheckInfo::values names.
  std::vector<std::pair<std::string_view, std::string>> values;
  bool suppressed = false;  // exempted (shmguard.io/ignore, --ignore, a rule's ignore): reported, not counted

  Finding(Check c, std::string pointer_ = {});
  Finding& Num(std::string_view name, int64_t v);
  Finding& Val(std::string_view name, std::string v);
  Finding& At(Severity s);
  const std::string_view id() const { return InfoOf(check).id; }
  // The number or text of that name; 0 or "" when it was not set. Num, Val and these throw
  // std::logic_error for a name the check does not carry.
  int64_t Number(std::string_view name) const;
  bool HasNumber(std::string_view name) const;
  const std::string& Value(std::string_view name) const;
  bool operator==(const Finding&) const = default;
};

}  // namespace shmguard
