// admission.k8s.io/v1 AdmissionReview in, a Decision out (docs/sources.md §8): the request/response
// shape of controller-runtime's admission package, without HTTP. Base64 and the wire format of
// the response live in the server adapter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/values/json_node.h"
#include "core/values/json_patch.h"
#include "core/values/result.h"
#include "core/verdict/evaluation.h"

namespace shmguard {

struct AdmissionRequest {
  std::string uid;
  std::string group, version, kind;             // request.kind (the object's kind as the API server sees it)
  std::string namespace_name, name, operation;  // operation: CREATE, UPDATE, DELETE, CONNECT
  std::string sub_resource;                     // request.subResource: "resize", "status"; "" for the object itself
  bool dry_run = false;
  JsonNode object;      // request.object, a view into the review; absent or null for DELETE
  JsonNode old_object;  // request.oldObject: the object before an UPDATE; absent otherwise
};

// Reads the request of an AdmissionReview. Fails with kInvalidInput naming the JSON pointer
// when apiVersion is not admission.k8s.io/v1, kind is not AdmissionReview, request or
// request.uid is missing, or a field has the wrong type.
// REQUIRES: `review` outlives the result (its object is a view into it).
Result<AdmissionRequest> ParseReview(JsonNode review);

enum class Face { kMutate, kValidate };

struct Decision {
  bool allowed = true;
  int code = 200;  // 403 when denied
  // What to say: denied, every finding behind the denial (status.message); allowed, the findings
  // to warn about. The edge puts them in words (io/finding_text.h), each prefixed with its pod's
  // label when `prefix_pods` (the workload has more than one pod template).
  std::vector<Finding> findings;
  bool prefix_pods = false;
  JsonPatch patch;                   // RFC 6902 operations; empty means no patch
  Verdict verdict = Verdict::kSkip;  // for logs and metrics
  int64_t required_bytes = 0;        // largest planned dshm, 0 when none
  std::string name;                  // metadata.name, else generateName (for logs)
};

// The answer of one face to one request. CREATE of a kind whose AdmissionRoleOf is not kNone
// (Pod, JobSet, the training workloads) is evaluated in request.namespace; an UPDATE of a Pod's
// resize subresource is checked by /validate (EvaluateResize: resize-below-shm); everything
// else is allowed untouched. /mutate never denies:
// it patches what can be fixed and warns about the rest. /validate denies in `enforce`
// namespaces (verdict deny, or a patch the mutating webhook should have applied) and warns in
// `warn` ones.
// What the webhook configuration says of the namespace from its labels (the route it calls):
struct NamespaceLabels {
  // Its Pod Security level: the stricter of it and the policy rule's applies (under baseline or
  // restricted, no hostIPC or IPC_LOCK, and a warning says why).
  PodSecurityLevel pod_security = PodSecurityLevel::kPrivileged;
  // Labelled for enforcement: /validate denies as under a policy rule `mode: enforce` (unless the
  // policy turns the namespace off).
  bool enforce = false;
};
// What a decision reads besides the request.
struct DecideContext {
  const Policy& policy;
  Face face = Face::kMutate;
  NamespaceLabels labels = {};
  // The workloads' learned /dev/shm (EvaluateOptions::observations); nullptr: none.
  const ObservationIndex* observations = nullptr;
  // The ResourceClaims and templates the webhook keeps (EvaluateOptions::claims); nullptr: none.
  const ClaimIndex* claims = nullptr;
  // The work one review may take (EvaluateOptions::budget): past it the review is answered with
  // review-over-budget — allowed with its warning, denied by /validate in enforce namespaces —
  // and nothing else. nullptr: no bound.
  const WorkBudget* budget = nullptr;
  // The ConfigMaps the webhook keeps (EvaluateOptions::config_maps); nullptr: none.
  const ConfigMapIndex* config_maps = nullptr;
};
Decision Decide(const AdmissionRequest& request, const DecideContext& context);

// True for a finding the patch itself answers (the /dev/shm volume and mounts, IPC_LOCK,
// hostIPC, a Compose shm_size): /mutate does not warn about what it fixes; /validate, which sees
// the object after mutation, reports them as what the mutating webhook should have done.
bool FixedByPatch(const Finding& f);

}  // namespace shmguard
