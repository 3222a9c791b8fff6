// The floor of hybrid mode: what the exported MutatingAdmissionPolicy changed in a pod before the
// webhook saw it. kube-apiserver runs MutatingAdmissionPolicies before mutating webhooks
// (k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go, AllOrderedPlugins, v1.37.2 lines
// 110-111), so the webhook receives the pod with the floor in it. The policy's plan annotation
// (`"policyMode":true`) records each change it made; the webhook reads back the pod its author
// wrote and puts its own answer in place of the floor: the policy made the floor, so it may be
// made smaller. Nothing the pod's author wrote is made smaller.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/values/json_node.h"

namespace shmguard {

struct PolicyFloor {
  std::string volume;           // the /dev/shm volume it added, raised or mounted; empty: none
  bool added = false;           // it added `volume`
  std::string raised_from;      // the sizeLimit of `volume` it raised, as the author wrote it
  std::vector<int> mounted_in;  // containers it mounted `volume` in at /dev/shm: app, then init
  std::vector<int> locked_in;   // app containers it gave IPC_LOCK
  bool host_ipc = false;        // it set hostIPC
};

// The floor of `pod`: present when its plan annotation is the exported policies' (a JSON object
// with "policyMode":true). Fields of another type than the policy writes are read as absent.
std::optional<PolicyFloor> ReadPolicyFloor(JsonNode pod);

// `pod` as its author wrote it: each change of `floor` undone (the volume it added and every
// mount of it removed, or the sizeLimit it raised put back; the mounts it added, IPC_LOCK where
// it added it, hostIPC), and its plan annotation removed. A change the pod no longer shows is
// left as it is.
nlohmann::json UndoPolicyFloor(JsonNode pod, const PolicyFloor& floor);

}  // namespace shmguard
