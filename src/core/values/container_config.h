// What a container gets from ConfigMaps when it starts, beyond its spec: the variables envFrom
// sets and the files configMap volumes mount (facts/config_maps.h finds them). Plain values.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shmguard {

// A file a ConfigMap puts in a container: its text, and when its key ends in .yaml or .yml its
// first document as JSON (or why it is not YAML), parsed where the ConfigMap was read.
struct ConfigFile {
  std::string source;  // "ConfigMap vllm-config, key config.yaml"
  std::string text;
  std::optional<nlohmann::json> yaml;
  std::string yaml_error;
};

// What a container gets from ConfigMaps at start beyond its spec: envFrom's variables in the
// kubelet's order (a later one wins; the container's env: wins over all of them), the files
// configMap volumes mount, by path inside the container, and the ConfigMaps it uses that are
// not known, in words ("ConfigMap vllm-config").
struct ContainerConfig {
  std::string working_dir;  // the container's workingDir: where a relative path starts ("" unknown)
  std::vector<std::pair<std::string, std::string>> env;
  std::map<std::string, std::shared_ptr<const ConfigFile>, std::less<>> files;
  std::string unknown;
};

}  // namespace shmguard
