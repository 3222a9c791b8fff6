// The floor of hybrid mode: the /dev/shm the exported MutatingAdmissionPolicy gave a pod before
// the webhook saw it. kube-apiserver runs MutatingAdmissionPolicies before mutating webhooks
// (k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go, AllOrderedPlugins, v1.37.2 lines
// 110-111), so the webhook receives the pod with the floor in it. The policy's plan annotation
// (`"policyMode":true`) names the volume it added, or the one it raised and from what
// (`"volume"`, `"raisedFrom"`); the webhook puts its own plan in place of that one volume: the
// policy made it, so it may be made smaller. Nothing the pod's author wrote is made smaller.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "shmguard/json_node.h"

namespace shmguard {

struct PolicyFloor {
  std::string volume;       // the volume the policy added or raised; empty: it changed none
  std::string raised_from;  // the sizeLimit it raised, as the pod's author wrote it; empty: added
};

// The floor of `pod`: present when its plan annotation is the exported policies' (a JSON object
// with "policyMode":true), whose "volume" and "raisedFrom" are strings when present.
std::optional<PolicyFloor> ReadPolicyFloor(JsonNode pod);

// `pod` as it was before the policy: the volume it added and every mount of it removed, or the
// sizeLimit it raised put back, and its plan annotation removed. A volume the policy names that
// the pod no longer has, or one that is not a memory emptyDir, is left as it is.
nlohmann::json UndoPolicyFloor(JsonNode pod, const PolicyFloor& floor);

}  // namespace shmguard
