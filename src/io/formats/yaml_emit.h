// JSON -> YAML for the audit's YAML output and tests. Reading YAML is io/yaml_json.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace shmguard::io {

// Emits `value` as block-style YAML; strings that would read back as another type ("true",
// "8", "") are quoted. Ends with a newline. Never fails: should libyaml refuse, the JSON text
// (which is YAML too) is returned.
std::string JsonToYaml(const nlohmann::json& value);

}  // namespace shmguard::io
