// YAML <-> JSON for Kubernetes manifests. Plain scalars are typed as sigs.k8s.io/yaml
// (go-yaml v2, YAML 1.1) types them: "8" is an int, "true"/"yes"/"on" are bools, "~" is null,
// quoted scalars are strings. Merge keys ("<<: *anchor") are expanded; aliases are bounded so a
// "billion laughs" document fails instead of exhausting memory.
#pragma once

#include <string>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "shmguard/result.h"

namespace shmguard::io {

// Converts one parsed YAML node. `line_offset` is added to yaml-cpp's 0-based marks so errors
// name the line in the whole file. Fails with kInvalidInput and "line N" in `where` for a
// non-scalar mapping key, a duplicate key, invalid UTF-8, nesting deeper than 128 (a cyclic
// alias is infinitely deep), or more than 5 million nodes after alias expansion.
Result<nlohmann::json> YamlToJson(const YAML::Node& node, int line_offset = 0);

// Emits `value` as block-style YAML; strings that would read back as another type ("true",
// "8", "") are quoted. Ends with a newline.
std::string JsonToYaml(const nlohmann::json& value);

// The JSON type a plain YAML 1.1 scalar resolves to (exposed for tests).
nlohmann::json ResolvePlainScalar(const std::string& text);

}  // namespace shmguard::io
