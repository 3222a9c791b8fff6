// ConfigMaps a pod reads when it starts: the variables envFrom sets and the files configMap
// volumes (and projected volumes' configMap sources) mount, which a server's launch may take its
// flags from (`vllm serve --config /etc/vllm/config.yaml`, VLLM_* from envFrom). ConfigMapIndex
// holds the ConfigMaps of each namespace, read from the same files (the audit) or the API (the
// webhook's informer), each value already read by the adapter that found it (a .yaml or .yml
// key parsed); ResolveConfigMaps gives each container what they put in it. Pure: no I/O.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/values/container_config.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

// A ConfigMap's data, by key.
using ConfigMapData = std::map<std::string, std::shared_ptr<const ConfigFile>, std::less<>>;

class ConfigMapIndex {
 public:
  // Records the ConfigMap `name` of `namespace_name` ("default" when empty), replacing one
  // recorded before.
  void Put(std::string_view namespace_name, std::string_view name, ConfigMapData data);
  void Erase(std::string_view namespace_name, std::string_view name);
  // Its data; null when it is not known.
  const ConfigMapData* Find(std::string_view namespace_name, std::string_view name) const;
  size_t size() const { return maps_.size(); }

 private:
  // Shared: a copy of the index (the webhook publishes one per change) copies pointers only.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const ConfigMapData>, std::less<>> maps_;
};

// Sets t.container_config for each container that takes a ConfigMap of `namespace_name` through
// envFrom (configMapRef, with its prefix) or a volume it mounts (configMap, or a projected
// volume's configMap sources; items and subPath as the kubelet lays them out): the variables and
// files `index` knows, and the ConfigMaps it does not know, in words.
void ResolveConfigMaps(PodTemplate& t, std::string_view namespace_name, const ConfigMapIndex& index);

}  // namespace shmguard
