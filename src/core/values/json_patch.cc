// RFC 6901 escaping and RFC 6902 operations as text.
#include "core/values/json_patch.h"

#include "core/values/compact_json.h"

namespace shmguard {

std::string EscapePointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size() + 2);
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string UnescapePointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[++i] == '1' ? '/' : '~';
    } else {
      out += token[i];
    }
  }
  return out;
}

void JsonPatch::Op(std::string_view op, std::string_view path, std::string_view value) {
  if (count_++ > 0) {
    ops_ += ',';
  } else {
    ops_.reserve(1024);  // a pod's operations, most often, without regrowing
  }
  ops_ += R"({"op":")";
  ops_ += op;
  ops_ += R"(","path":)";
  AppendJsonQuoted(path, ops_);
  ops_ += R"(,"value":)";
  ops_ += value;
  ops_ += '}';
}

void JsonPatch::Remove(std::string_view path) {
  if (count_++ > 0) ops_ += ',';
  ops_ += R"({"op":"remove","path":)";
  AppendJsonQuoted(path, ops_);
  ops_ += '}';
}

void JsonPatch::Extend(const JsonPatch& more) {
  if (more.empty()) return;
  if (count_ > 0) ops_ += ',';
  ops_ += more.ops_;
  count_ += more.count_;
}

namespace {

void Diff(const nlohmann::json& from, const nlohmann::json& to, std::string& path, JsonPatch& out) {
  if (from == to) return;
  const size_t at = path.size();
  if (from.is_object() && to.is_object()) {
    for (const auto& [key, value] : from.items()) {
      if (to.contains(key)) continue;
      path += '/' + EscapePointerToken(key);
      out.Remove(path);
      path.resize(at);
    }
    for (const auto& [key, value] : to.items()) {
      path += '/' + EscapePointerToken(key);
      auto it = from.find(key);
      if (it == from.end()) {
        out.Add(path, CompactJson(value));
      } else {
        Diff(*it, value, path, out);
      }
      path.resize(at);
    }
    return;
  }
  if (from.is_array() && to.is_array() && from.size() == to.size()) {
    for (size_t i = 0; i < from.size(); ++i) {
      path += '/' + std::to_string(i);
      Diff(from[i], to[i], path, out);
      path.resize(at);
    }
    return;
  }
  out.Replace(path, CompactJson(to));
}

}  // namespace

JsonPatch DiffPatch(const nlohmann::json& from, const nlohmann::json& to, const std::string& path) {
  JsonPatch out;
  std::string p = path;
  Diff(from, to, p, out);
  return out;
}

}  // namespace shmguard
