// RFC 6901 escaping and RFC 6902 operation objects.
#include "shmguard/json_patch.h"

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

nlohmann::json AddOp(const std::string& path, nlohmann::json value) {
  return {{"op", "add"}, {"path", path}, {"value", std::move(value)}};
}

nlohmann::json ReplaceOp(const std::string& path, nlohmann::json value) {
  return {{"op", "replace"}, {"path", path}, {"value", std::move(value)}};
}

}  // namespace shmguard
