// Type-safe reads of Kubernetes objects held as nlohmann::json: the core never uses at() or
// operator[] on input (they throw or insert), only these.
#pragma once

#include <string>
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

// The string member `key` of `obj`, or "" when it is missing or not a string.
inline std::string StringMember(const nlohmann::json& obj, std::string_view key) {
  const nlohmann::json* v = FindMember(obj, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace shmguard
