// The shmguard.io/plan annotation a patch writes: what SizePod's numbers (PlanNote) say of the
// size, as compact JSON; and its size read back from a pod.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/sizing/pod_sizing.h"
#include "core/values/json_node.h"

namespace shmguard {

// Compact JSON with sorted keys, as json::dump writes it:
//   kPlan      {"batchBytes","gpus","nodes","observed"?,"prefetchFactor","procs","required","workers"}
//   kServer    {"gpus","nodes","observed"?,"procs","required","server","serverBytes"}
//   kEstimate  {"estimated","floor","gpus","nodes","observed"?,"procs","required"}
// Sizes as Kubernetes quantities ("16Mi"); "observed" ({"last","peak","runs","workload"}) when
// the size was learned from a profile. "{}" for kNone.
std::string PlanAnnotation(const PlanNote& note);

// The /dev/shm shmguard planned for `pod`: its shmguard.io/plan annotation's `required`, written
// by the webhook or by the exported admission policies. nullopt without the annotation, or when it
// is not such a plan (a tenant may write anything there: it is read, never trusted further).
std::optional<int64_t> PlannedShmBytes(JsonNode pod);

}  // namespace shmguard
