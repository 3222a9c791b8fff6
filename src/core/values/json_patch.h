// RFC 6902 JSON Patch, as kube-apiserver applies it (evanphx/json-patch: "add" under a missing
// parent fails, so parents are created first), and RFC 6901 pointer escaping.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shmguard {

// One reference token, escaped per RFC 6901 §3: "~" -> "~0", "/" -> "~1".
// "shmguard.io/plan" -> "shmguard.io~1plan".
std::string EscapePointerToken(std::string_view token);
// The token read back: "~1" -> "/", "~0" -> "~".
std::string UnescapePointerToken(std::string_view token);

// A patch written as compact JSON text while it is built: the server sends the text as it is,
// and only the audit's outputs make a tree of it. Each operation's members are in nlohmann's
// (sorted) order and values are written as CompactJson writes them, so Text() is byte for byte
// CompactJson(ToJson()).
class JsonPatch {
 public:
  // {"op":"add","path":path,"value":value} (RFC 6902 §4.1). `path` is already escaped; `value`
  // is compact JSON text with sorted keys.
  void Add(std::string_view path, std::string_view value) { Op("add", path, value); }
  // {"op":"replace","path":path,"value":value} (RFC 6902 §4.3).
  void Replace(std::string_view path, std::string_view value) { Op("replace", path, value); }
  // {"op":"remove","path":path} (RFC 6902 §4.2).
  void Remove(std::string_view path);
  // Appends the operations of `more`, after this patch's.
  void Extend(const JsonPatch& more);

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }  // operations
  std::string Text() const { return "[" + ops_ + "]"; }
  nlohmann::json ToJson() const { return nlohmann::json::parse(Text()); }
  bool operator==(const JsonPatch&) const = default;

 private:
  void Op(std::string_view op, std::string_view path, std::string_view value);

  std::string ops_;  // the operations' text, comma-separated
  size_t count_ = 0;
};

// The operations that turn `from` into `to`: objects compared member by member (a member
// removed, added or replaced), arrays of the same length element by element, and any other
// difference (an array that changed length, a value of another type) replaced whole. Applied to
// `from`, it gives `to`. `path` is the pointer of both values (empty: the document).
JsonPatch DiffPatch(const nlohmann::json& from, const nlohmann::json& to, const std::string& path = "");

}  // namespace shmguard
