// Policy mode (docs/policy-mode.md): the webhook's Pod path written as CEL, for kube-apiserver
// to run itself. ExportAdmissionPolicies turns a policy into a MutatingAdmissionPolicy and its
// binding (the /dev/shm volume, the mounts, IPC_LOCK, hostIPC and the plan annotation) and two
// ValidatingAdmissionPolicies with theirs (denials in enforcing namespaces, warnings elsewhere),
// all admissionregistration.k8s.io/v1 (Kubernetes >= 1.36).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shmguard/policy.h"

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
};

// The objects, in the order they are to be created: the mutating policy and binding, then the
// validating policies and bindings. Pure: the same policy gives the same objects.
std::vector<nlohmann::json> ExportAdmissionPolicies(const Policy& policy, const PolicyExportOptions& options = {});

// An fnmatch(3) glob (flags 0, as MatchNamespace reads the policy's) as an anchored RE2 regular
// expression: "ml-*" -> "^ml-.*$".
std::string GlobToRegex(std::string_view glob);

}  // namespace shmguard
