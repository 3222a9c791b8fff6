// How a controller lays one pod spec over another, as Kubernetes' strategic merge patch does
// for the fields shmguard reads: used where a pod is built from a runtime and the object that
// uses it (a Trainer TrainJob and its runtime, a KServe InferenceService and its ServingRuntime).
// Internal to the core.
#pragma once

#include <initializer_list>
#include <string_view>

#include "core/values/json_node.h"

namespace shmguard::workloads {

// Merges `patch` into `into`: mappings member by member; the lists core/v1 merges item by item
// (patchMergeKey: containers, initContainers, volumes and env by name, volumeMounts by
// mountPath; JobSet's replicatedJobs by name) item by item; anything else replaced. `key` is the
// member `into` is held under.
void MergeSpec(nlohmann::json& into, const nlohmann::json& patch, std::string_view key = {});

// The "name" of a list item (a container, a volume, a job) when it is a string, else "": what a
// merge by name matches on, read without trusting the item's type.
inline std::string_view ItemName(const nlohmann::json& item) { return JsonNode(item).StringMember("name"); }

// The object at `path` below `j`, made where missing; nullptr when something on the way is not
// an object.
nlohmann::json* ObjectAt(nlohmann::json& j, std::initializer_list<const char*> path);

}  // namespace shmguard::workloads
