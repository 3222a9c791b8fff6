// The shmguard.io/plan annotation a patch writes: what SizePod's numbers (PlanNote) say of the
// size, as compact JSON. Internal to the core.
#pragma once

#include <string>

#include "core/sizing/pod_sizing.h"

namespace shmguard {

// Compact JSON with sorted keys, as json::dump writes it:
//   kPlan      {"batchBytes","gpus","nodes","observed"?,"prefetchFactor","procs","required","workers"}
//   kServer    {"gpus","nodes","observed"?,"procs","required","server","serverBytes"}
//   kEstimate  {"estimated","floor","gpus","nodes","observed"?,"procs","required"}
// Sizes as Kubernetes quantities ("16Mi"); "observed" ({"last","peak","runs","workload"}) when
// the size was learned from a profile. "{}" for kNone.
std::string PlanAnnotation(const PlanNote& note);

}  // namespace shmguard
