// Type-safe reads of Kubernetes objects held as nlohmann::json: the core never uses at() or
// operator[] on input (they throw or insert), only these.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace shmguard {

// The member `key` of `obj`, or nullptr when `obj` is not an object, has no such member, or
// the member is null (Kubernetes treats null as absent).
inline const nlohmann::json* FindMember(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace shmguard
