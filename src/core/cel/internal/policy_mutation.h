// The mutation policy mode writes: its JSON Patch and the shmguard.io/plan annotation it puts
// on every pod it matches. Internal to the core.
#pragma once

#include <string>

namespace shmguard::cel {

// The JSON Patch operations, in the order BuildPodPatch writes them, then the plan annotation.
// Policy mode writes the plan into every pod the policy matches: it carries the verdict the
// validating policies read. Hybrid mode (`hybrid`) writes it only with a change: the floor the
// webhook reads back (policy_floor.h).
std::string PatchExpression(bool hybrid);

// The plan annotation's expression, the mutating policy's `plan` variable: what the pod was
// given and from what (sorted keys, as the webhook's, but for the verdict, last, which the
// validating policies read), and each change the policy made, so that the webhook can read back
// the pod its author wrote (ReadPolicyFloor).
std::string PlanExpression();

}  // namespace shmguard::cel
