// PatchExpression and PlanExpression: policy mode's mutation as fixed CEL text.
#include "core/cel/internal/policy_mutation.h"

#include <string_view>

namespace shmguard::cel {
namespace {

// The mutation: JSON Patch operations in the order BuildPodPatch writes them, then the plan
// annotation. Policy mode writes the plan into every pod the policy matches: it carries the
// verdict the validating policies read. Hybrid mode has no validating policies and writes it only
// with a change, the floor the webhook reads back.
constexpr std::string_view kChanges = R"((variables.shmParts && variables.mountKind == 0 ? [has(object.spec.volumes) ?
  JSONPatch{op: "add", path: "/spec/volumes/-", value: Object.spec.volumes{name: variables.volumeName, emptyDir: Object.spec.volumes.emptyDir{medium: "Memory", sizeLimit: variables.targetText}}} :
  JSONPatch{op: "add", path: "/spec/volumes", value: [Object.spec.volumes{name: variables.volumeName, emptyDir: Object.spec.volumes.emptyDir{medium: "Memory", sizeLimit: variables.targetText}}]}] : []) +
(variables.raise ? [JSONPatch{op: "add", path: "/spec/volumes/" + string(variables.volumeIndex) + "/emptyDir/sizeLimit", value: variables.targetText}] : []) +
variables.apps.transformList(i, c, variables.mountIn[i],
  has(c.volumeMounts) ?
    JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/volumeMounts/-", value: Object.spec.containers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}} :
    JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/volumeMounts", value: [Object.spec.containers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}]}) +
variables.inits.transformList(i, c, variables.mountIn[size(variables.apps) + i],
  has(c.volumeMounts) ?
    JSONPatch{op: "add", path: "/spec/initContainers/" + string(i) + "/volumeMounts/-", value: Object.spec.initContainers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}} :
    JSONPatch{op: "add", path: "/spec/initContainers/" + string(i) + "/volumeMounts", value: [Object.spec.initContainers.volumeMounts{name: variables.volumeName, mountPath: "/dev/shm"}]}) +
variables.apps.transformList(i, c, variables.lockIn[i],
  !has(c.securityContext) ? JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext", value: Object.spec.containers.securityContext{capabilities: Object.spec.containers.securityContext.capabilities{add: ["IPC_LOCK"]}}} :
  !has(c.securityContext.capabilities) ? JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext/capabilities", value: Object.spec.containers.securityContext.capabilities{add: ["IPC_LOCK"]}} :
  !has(c.securityContext.capabilities.add) ? JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext/capabilities/add", value: ["IPC_LOCK"]} :
  JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/securityContext/capabilities/add/-", value: "IPC_LOCK"}) +
(variables.setHostIPC ? [JSONPatch{op: "add", path: "/spec/hostIPC", value: true}] : []))";
constexpr std::string_view kPlanOp = R"([has(object.metadata.annotations) ?
  JSONPatch{op: "add", path: "/metadata/annotations/shmguard.io~1plan", value: variables.plan} :
  JSONPatch{op: "add", path: "/metadata/annotations", value: {"shmguard.io/plan": variables.plan}}])";

// The plan annotation: what the pod was given and from what (sorted keys, as the webhook's, but
// for the verdict, last, which the validating policies read), and each change the policy made,
// so that the webhook can read back the pod its author wrote (ReadPolicyFloor): the /dev/shm
// volume `volume` it `added` or raised from `raisedFrom`, the containers it mounted it in
// (`mountedIn`: app containers, then init containers, by index), those given IPC_LOCK
// (`lockedIn`) and `hostIPC`.
constexpr std::string_view kPlan =
    R"('{"gpus":' + string(variables.gpus) + (variables.shmParts && variables.mountKind == 0 ? ',"added":true' : '') + (variables.setHostIPC ? ',"hostIPC":true' : '') + (variables.lockIn.exists(l, l) ? ',"lockedIn":[' + variables.lockIn.transformList(i, l, l, string(i)).join(',') + ']' : '') + (variables.mountIn.exists(m, m) ? ',"mountedIn":[' + variables.mountIn.transformList(i, m, m, string(i)).join(',') + ']' : '') + ',"nodes":' + string(variables.nodes) + ',"policyMode":true,"procs":' + string(variables.procs) + (variables.raise ? ',"raisedFrom":"' + string(variables.volumes[variables.volumeIndex].emptyDir.sizeLimit) + '"' : '') + ',"required":"' + variables.targetText + '"' + (variables.changes ? ',"volume":"' + variables.volumeName + '"' : '') + (variables.sized ? ',"workers":' + string(variables.workers) : ',"estimated":true') + ',"verdict":"' + (size(variables.problems) == 0 ? 'ok' : 'deny') + '"}')";

}  // namespace

std::string PatchExpression(bool hybrid) {
  const std::string changes(kChanges), plan(kPlanOp);
  if (hybrid) return "!variables.changes ? [] : " + changes + " + " + plan;
  return "(!variables.changes ? [] : " + changes + ") + " + plan;
}

std::string PlanExpression() { return std::string(kPlan); }

}  // namespace shmguard::cel
