// JsonNode over nlohmann::json: a = the value's address.
#include "shmguard/json_node.h"

namespace shmguard {
namespace {

using nlohmann::json;

JsonNode::Type TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return JsonNode::Type::kNull;
    case json::value_t::boolean: return JsonNode::Type::kBool;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return JsonNode::Type::kInteger;
    case json::value_t::number_float: return JsonNode::Type::kFloat;
    case json::value_t::string: return JsonNode::Type::kString;
    case json::value_t::array: return JsonNode::Type::kArray;
    case json::value_t::object: return JsonNode::Type::kObject;
    default: return JsonNode::Type::kNull;  // binary and discarded never come out of a parser
  }
}

const json& Value(const JsonNode& n) { return *reinterpret_cast<const json*>(n.a()); }

class NlohmannReader final : public JsonNode::Reader {
 public:
  JsonNode Find(const JsonNode& object, std::string_view key) const override {
    const json& o = Value(object);
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return {};
    return *it;
  }
  // An item's b is the address just past its list's last item.
  JsonNode FirstItem(const JsonNode& array) const override {
    const auto& items = Value(array).get_ref<const json::array_t&>();
    return items.empty() ? JsonNode() : Item(items.data(), items.data() + items.size());
  }
  JsonNode NextItem(const JsonNode& item) const override {
    const json* next = &Value(item) + 1;
    const json* end = reinterpret_cast<const json*>(item.b());
    return next == end ? JsonNode() : Item(next, end);
  }
  std::vector<std::pair<std::string_view, JsonNode>> Members(const JsonNode& object) const override {
    std::vector<std::pair<std::string_view, JsonNode>> out;
    const auto& members = Value(object).get_ref<const json::object_t&>();
    out.reserve(members.size());
    for (const auto& [key, value] : members) out.emplace_back(key, value);
    return out;
  }
  std::string_view String(const JsonNode& string) const override {
    return Value(string).get_ref<const std::string&>();
  }
  bool Bool(const JsonNode& boolean) const override { return Value(boolean).get<bool>(); }
  int64_t Integer(const JsonNode& integer) const override { return Value(integer).get<int64_t>(); }
  json Copy(const JsonNode& node) const override { return Value(node); }

 private:
  JsonNode Item(const json* at, const json* end) const {
    return JsonNode(this, TypeOf(*at), reinterpret_cast<uint64_t>(at), reinterpret_cast<uint64_t>(end));
  }
};

const NlohmannReader kNlohmannReader;

}  // namespace

JsonNode::JsonNode(const json& value)
    : JsonNode(&kNlohmannReader, TypeOf(value), reinterpret_cast<uint64_t>(&value), 0) {}

}  // namespace shmguard
