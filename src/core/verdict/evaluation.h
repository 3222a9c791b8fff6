// The verdict on one object under a policy (docs/sources.md): per pod template, the plan, the
// memory check, the findings (checks.h: IDs, places and numbers; words are the edges' business)
// and the RFC 6902 patch. Shared by the audit CLI and both webhook faces; it reads nothing but
// its arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checks/checks.h"
#include "core/facts/config_maps.h"
#include "core/facts/pod_facts.h"
#include "core/facts/resource_claims.h"
#include "core/plan/shm_plan.h"
#include "core/plan/shm_profile.h"
#include "core/policy/policy.h"
#include "core/values/json_node.h"
#include "core/values/json_patch.h"
#include "core/values/work_budget.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

struct PodEvaluation {
  std::string label;  // "pod", "replicatedJob workers"
  std::string path;   // JSON pointer of the pod spec
  Verdict verdict = Verdict::kOk;
  // The plan: from the sizing annotations, or (estimated) the floor's plan with no DataLoader.
  std::optional<ShmPlan> plan;
  // The /dev/shm size this verdict stands for: the plan's, or for an estimated pod the floor
  // (when what it has is enough) or the size it is patched to; 0 when nothing was sized.
  int64_t required_bytes = 0;
  bool estimated = false;                     // sized without DataLoader annotations (policy `unannotated`)
  std::optional<int64_t> memory_limit_bytes;  // nullopt: unknown or unlimited
  // "64Mi (container default)", "emptyDir Memory 1Gi", "the node's /dev/shm (hostIPC: true)"
  std::string current_shm;
  // current_shm in bytes (PodReading::current_bytes): nullopt where no number applies.
  std::optional<int64_t> current_bytes;
  std::vector<Finding> findings;     // why this verdict, in order; `pod` is this pod's label
  std::vector<std::string> changes;  // what this pod's part of the patch does, one line each
  JsonPatch patch;                   // separate pods (Compose services): this pod's operations; else empty
};

struct Evaluation {
  std::string api_version, kind, namespace_name, name;
  bool workload = false;       // the object is a kind shmguard sizes (has pod templates)
  bool separate_pods = false;  // the pods are separate applications (Compose services)
  NamespaceRule rule;          // the rule that applied
  Verdict verdict = Verdict::kSkip;
  std::vector<Finding> findings;  // the object's own (why skipped, how it was read), pod ""
  std::vector<PodEvaluation> pods;
  JsonPatch patch;  // every pod's operations, in pod order

  // The object's findings, then each pod's, in order.
  std::vector<Finding> AllFindings() const;
  // The largest required size over the pods, 0 when none was planned.
  int64_t RequiredBytes() const;
};

// Which checks are exempted for an object: the policy rule's `ignore`, the caller's (--ignore),
// and the object's and each pod template's shmguard.io/ignore annotation ("id,id"). An exempted
// finding stays, marked suppressed, and no longer counts toward the verdict: an exempted error
// no longer denies; an exempted part of the patch (shm-below-need, ipc-lock-missing,
// host-ipc-missing) is not written. The arithmetic never changes: a size over the memory limit is
// never patched in.
struct Exemptions {
  std::vector<Check> checks = {};  // the caller's (--ignore)
};

// How an object is evaluated, beyond the policy. Every field has the default an audit of a
// manifest wants.
struct EvaluateOptions {
  // The namespace the object is created in: its own when empty, "default" when it has none.
  std::string_view namespace_name = {};
  Detail detail = Detail::kAll;
  // A TrainJob whose runtime is here is read as that runtime's pods.
  const RuntimeCatalog* runtimes = nullptr;
  // The namespace's own Pod Security level (its pod-security.kubernetes.io/enforce label): the
  // stricter of it and the policy rule's applies.
  PodSecurityLevel namespace_pod_security = PodSecurityLevel::kPrivileged;
  Exemptions exemptions = {};
  // What the workloads' pods were seen to use (shm_profile.h): a pod template whose workload
  // has a profile is sized max(the formula's size, peak × policy.observed.margin), with a
  // sized-from-observation finding. nullptr: sized from the formula alone.
  const ObservationIndex* observations = nullptr;
  // The ResourceClaims and ResourceClaimTemplates known (resource_claims.h): a pod's containers
  // get the GPUs of the claims they use. nullptr: none known.
  const ClaimIndex* claims = nullptr;
  // The ConfigMaps known (config_maps.h): a server's launch reads the files and envFrom
  // variables its container gets from them. nullptr: none known.
  const ConfigMapIndex* config_maps = nullptr;
  // What the exported admission policies would do instead of the webhook (docs/policy-mode.md):
  // no server launch read, no profile, no claims, and a controller's templates left as they are
  // (the policies patch its pods as they are created).
  bool policy_mode = false;
  // The work the evaluation may take (work_budget.h): once it is spent, the evaluation stops at
  // its next step, with review-over-budget and nothing else. nullptr: no bound.
  const WorkBudget* budget = nullptr;
};

// Evaluates `object` under `policy`. Never fails: malformed fields in an annotated pod are a
// kDeny whose reason names the field; a non-workload is a kSkip saying why.
Evaluation Evaluate(JsonNode object, const Policy& policy, const EvaluateOptions& options = {});

}  // namespace shmguard
