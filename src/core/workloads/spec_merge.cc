// MergeSpec and ObjectAt. Source: kubernetes/api core/v1/types.go (the patchMergeKey tags of
// PodSpec.Containers, InitContainers, Volumes, Container.Env and VolumeMounts), and
// kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go (replicatedJobs, merged by name).
#include "core/workloads/internal/spec_merge.h"

#include <algorithm>

namespace shmguard::workloads {
namespace {

using nlohmann::json;

// The member that identifies the items of a list merged item by item; "" for a list replaced
// whole.
std::string_view MergeKey(std::string_view list) {
  if (list == "volumeMounts") return "mountPath";
  if (list == "containers" || list == "initContainers" || list == "volumes" || list == "env" ||
      list == "replicatedJobs") {
    return "name";
  }
  return {};
}

}  // namespace

void MergeSpec(json& into, const json& patch, std::string_view key) {
  if (patch.is_object() && into.is_object()) {
    for (const auto& [k, v] : patch.items()) MergeSpec(into[k], v, k);
    return;
  }
  const std::string_view merge_key = MergeKey(key);
  if (!merge_key.empty() && patch.is_array() && into.is_array()) {
    for (const json& item : patch) {
      auto id = item.is_object() ? item.find(merge_key) : item.end();
      auto same = std::find_if(into.begin(), into.end(), [&](const json& have) {
        return id != item.end() && have.is_object() && have.contains(merge_key) && have[merge_key] == *id;
      });
      if (same != into.end()) {
        MergeSpec(*same, item);
      } else {
        into.push_back(item);
      }
    }
    return;
  }
  into = patch;
}

json* ObjectAt(json& j, std::initializer_list<const char*> path) {
  json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    cur = &(*cur)[key];
    if (cur->is_null()) *cur = json::object();
  }
  return cur->is_object() ? cur : nullptr;
}

}  // namespace shmguard::workloads
