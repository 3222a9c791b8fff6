// RFC 6901 escaping and RFC 6902 operations as text.
#include "shmguard/json_patch.h"

#include "shmguard/compact_json.h"

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

void JsonPatch::Extend(const JsonPatch& more) {
  if (more.empty()) return;
  if (count_ > 0) ops_ += ',';
  ops_ += more.ops_;
  count_ += more.count_;
}

}  // namespace shmguard
