// A resize of a pod against the /dev/shm it has (docs/checks.md#resize-below-shm). An UPDATE of
// the pod's resize subresource changes its containers' resources in place (GA in Kubernetes
// 1.35) or the pod's own (KEP-5419), and so the memory limit /dev/shm's pages count against;
// under KEP-6030 it can also change a memory emptyDir's sizeLimit. A limit shrunk below what
// the pod's /dev/shm takes gets the pod OOM-killed when /dev/shm fills, long after admission.
#pragma once

#include "core/policy/policy.h"
#include "core/values/json_node.h"
#include "core/verdict/evaluation.h"

namespace shmguard {

// The resize from `old_pod` to `new_pod` (Pods as the API server sends them), in
// `options.namespace_name`. Skip when the namespace's rule is off, the pod is opted out
// (shmguard.io/mode: skip), or it mounts no memory-backed /dev/shm of a known size: its
// sizeLimit, else the shmguard.io/plan it carries.
// Deny, with resize-below-shm at the new memory limit, when that size does not fit the new limit
// by the rule a creation is held to (MemoryLimitDenial: at most maxFractionOfMemoryLimit of it)
// and the resize made it worse: a lower memory limit, or a larger /dev/shm. Else ok: a resize
// that grows the limit, or leaves both as they were, is never refused. The check can be exempted
// as any other (the policy rule's ignore, the caller's, the pod's shmguard.io/ignore).
Evaluation EvaluateResize(JsonNode old_pod, JsonNode new_pod, const Policy& policy, const EvaluateOptions& options);

}  // namespace shmguard
