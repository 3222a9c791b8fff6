// RFC 6902 JSON Patch operations and RFC 6901 pointer escaping, as kube-apiserver applies them
// (evanphx/json-patch: "add" under a missing parent fails, so parents are created first).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace shmguard {

// One reference token, escaped per RFC 6901 §3: "~" -> "~0", "/" -> "~1".
// "shmguard.io/plan" -> "shmguard.io~1plan".
std::string EscapePointerToken(std::string_view token);

// {"op": "add", "path": path, "value": value} (RFC 6902 §4.1). `path` is already escaped.
nlohmann::json AddOp(const std::string& path, nlohmann::json value);

// {"op": "replace", "path": path, "value": value} (RFC 6902 §4.3).
nlohmann::json ReplaceOp(const std::string& path, nlohmann::json value);

}  // namespace shmguard
