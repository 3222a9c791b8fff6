// Policy mode (docs/policy-mode.md): the webhook's Pod path written as CEL, for kube-apiserver
// to run itself. ExportAdmissionPolicies turns a policy into a MutatingAdmissionPolicy and its
// binding (the /dev/shm volume, the mounts, IPC_LOCK, hostIPC and the plan annotation), two
// ValidatingAdmissionPolicies with theirs (denials in enforcing namespaces, warnings elsewhere)
// for a pod's creation, and two for a resize of a running pod (resize-below-shm), all
// admissionregistration.k8s.io/v1 (Kubernetes >= 1.36).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/values/result.h"

namespace shmguard {

struct PolicyExportOptions {
  // The objects' names, and the prefix of the ValidatingAdmissionPolicies'.
  std::string name = "shmguard";
  // Namespaces the bindings never reach, whatever the policy says (the chart's
  // webhook.excludedNamespaces and its release namespace).
  std::vector<std::string> excluded_namespaces = {"kube-system", "kube-public", "kube-node-lease"};
  // Namespaces labelled `<enabled_label>=false` are left alone, as the webhook's cluster scope
  // leaves them; namespaces labelled `<enforce_label>=true` are enforced as under `mode: enforce`.
  std::string enabled_label = "shmguard.io/enabled";
  std::string enforce_label = "shmguard.io/enforce";
  std::string pod_security_label = "pod-security.kubernetes.io/enforce";
  // Hybrid mode: the mutating policy and its binding only, a floor under the webhook, which
  // validates and puts its own plan in place of the floor (policy_floor.h). The validating
  // policies would judge the webhook's plan by the policy's size.
  bool hybrid = false;
  // Appended to every object's name and to the policy a binding names: kStaticSuffix for the
  // objects kube-apiserver loads from its staticManifestsDir, which must carry it.
  std::string name_suffix = "";
};

// The suffix kube-apiserver requires of the admission objects it loads from files (KEP-5793:
// k8s.io/apiserver pkg/admission/plugin/manifest/validation.go, StaticConfigSuffix), and refuses
// through the API.
inline constexpr char kStaticSuffix[] = ".static.k8s.io";

// What policy mode writes into CEL at most: more namespace rules, or a rule whose globs make a
// longer regular expression, is refused (their CEL would pass the API server's limits).
inline constexpr size_t kMaxCelNamespaceRules = 500;
inline constexpr size_t kMaxCelRegexBytes = 8192;

// The objects, in the order they are to be created: the mutating policy and binding, then
// (unless hybrid) the validating policies and bindings, creation's then resize's. Every value of the policy and the
// options is a CEL variable whose expression is a literal (strings escaped, so no value can end its literal); every
// other expression is fixed text. Pure: the same policy gives the same objects. Fails with kInvalidInput naming the
// field for what CEL cannot hold: a glob GlobRegex refuses, more than kMaxCelNamespaceRules rules, a rule's regular
// expression over kMaxCelRegexBytes.
Result<std::vector<nlohmann::json>> ExportAdmissionPolicies(const Policy& policy,
                                                            const PolicyExportOptions& options = {});

// GlobRegex(glob) (glob.h), "" for a glob it refuses.
std::string GlobToRegex(std::string_view glob);

}  // namespace shmguard
