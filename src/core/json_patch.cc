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

namespace {

// Built member by member: an initializer list would copy `value` and each string once more,
// and these run for every admitted pod.
nlohmann::json Op(const char* op, const std::string& path, nlohmann::json value) {
  nlohmann::json out = nlohmann::json::object();
  auto& members = out.get_ref<nlohmann::json::object_t&>();
  members.emplace("op", op);
  members.emplace("path", path);
  members.emplace("value", std::move(value));
  return out;
}

}  // namespace

nlohmann::json AddOp(const std::string& path, nlohmann::json value) {
  return Op("add", path, std::move(value));
}

nlohmann::json ReplaceOp(const std::string& path, nlohmann::json value) {
  return Op("replace", path, std::move(value));
}

}  // namespace shmguard
