// A ConfigMap read for the core's ConfigMapIndex (core/facts/config_maps.h): its data's
// values, a .yaml or .yml key's parsed as YAML (as vLLM's yaml.safe_load would read the file).
// What is kept is bounded (kMaxConfigValueBytes a value, a YAML file's kMaxConfigYamlBytes), so
// that the webhook's copy of a cluster's ConfigMaps stays small.
#pragma once

#include <optional>
#include <string>

#include "core/facts/config_maps.h"
#include "core/values/json_node.h"

namespace shmguard::io {

// A value longer than this is not kept unless it is a YAML file (no launch reads a variable
// that long); a YAML file longer than kMaxConfigYamlBytes is not kept.
inline constexpr size_t kMaxConfigValueBytes = 4096;
inline constexpr size_t kMaxConfigYamlBytes = size_t{64} << 10;

struct ReadConfigMapResult {
  std::string namespace_name, name;
  ConfigMapData data;
};

// `object` as a ConfigMap (its kind, or `kind` for a list's item, which carries none): its
// namespace, name and kept data; nullopt for any other object.
std::optional<ReadConfigMapResult> ReadConfigMap(JsonNode object, std::string_view kind = {});

}  // namespace shmguard::io
