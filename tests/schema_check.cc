// CheckSchema: a recursive walk of value and schema together.
#include "schema_check.h"

#include <regex>

namespace shmguard::test {
namespace {

using nlohmann::json;

bool HasType(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<int64_t>(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

class Checker {
 public:
  explicit Checker(const json& root) : root_(root) {}

  void Check(const json& v, const json& s, const std::string& at) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) problems.push_back(at + ": not allowed here");
      return;
    }
    if (!s.is_object()) return;
    if (auto ref = s.find("$ref"); ref != s.end()) {
      std::string path = ref->get<std::string>();  // "#/definitions/NAME"
      return Check(v, root_.at(json::json_pointer(path.substr(1))), at);
    }
    if (v.is_null() && s.value("nullable", false)) return;
    if (auto any = s.find("anyOf"); any != s.end()) {
      bool one = false;
      for (const auto& option : *any) {
        Checker sub(root_);
        sub.Check(v, option, at);
        one = one || sub.problems.empty();
      }
      if (!one) problems.push_back(at + ": matches none of anyOf");
    }
    if (auto type = s.find("type"); type != s.end()) {
      bool ok = false;
      if (type->is_string()) ok = HasType(v, *type);
      for (const auto& t : type->is_array() ? *type : json::array()) ok = ok || HasType(v, t);
      if (!ok) {
        problems.push_back(at + ": must be " + type->dump() + ", is " + v.type_name());
        return;
      }
    }
    if (auto e = s.find("enum"); e != s.end() && std::find(e->begin(), e->end(), v) == e->end()) {
      problems.push_back(at + ": " + v.dump() + " is not one of " + e->dump());
    }
    if (v.is_string()) {
      const auto& text = v.get_ref<const std::string&>();
      if (auto p = s.find("pattern"); p != s.end() && !std::regex_search(text, std::regex(p->get<std::string>()))) {
        problems.push_back(at + ": \"" + text + "\" does not match " + p->get<std::string>());
      }
      if (text.size() < s.value("minLength", size_t{0})) problems.push_back(at + ": too short");
      if (s.contains("maxLength") && text.size() > s["maxLength"].get<size_t>()) problems.push_back(at + ": too long");
    }
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
        problems.push_back(at + ": below minimum");
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
        problems.push_back(at + ": above maximum");
    }
    if (v.is_array()) {
      if (v.size() < s.value("minItems", size_t{0})) problems.push_back(at + ": too few items");
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) problems.push_back(at + ": too many items");
      if (auto items = s.find("items"); items != s.end()) {
        for (size_t i = 0; i < v.size(); ++i) Check(v[i], *items, at + "/" + std::to_string(i));
      }
    }
    if (v.is_object()) {
      if (v.size() < s.value("minProperties", size_t{0})) problems.push_back(at + ": too few properties");
      for (const auto& r : s.value("required", json::array())) {
        if (!v.contains(r.get<std::string>())) problems.push_back(at + ": required " + r.dump() + " is missing");
      }
      const json props = s.value("properties", json::object());
      const bool preserve = s.value("x-kubernetes-preserve-unknown-fields", false);
      for (const auto& [key, value] : v.items()) {
        std::string child = at + "/" + key;
        if (auto p = props.find(key); p != props.end()) {
          Check(value, *p, child);
        } else if (auto extra = s.find("additionalProperties"); extra != s.end()) {
          Check(value, *extra, child);
        } else if (!preserve && !props.empty()) {
          problems.push_back(child + ": not a field of this kind (the API server drops it)");
        }
      }
    }
  }

  std::vector<std::string> problems;

 private:
  const json& root_;
};

}  // namespace

std::vector<std::string> CheckSchema(const json& value, const json& schema) {
  Checker c(schema);
  c.Check(value, schema, "");
  return c.problems;
}

}  // namespace shmguard::test
