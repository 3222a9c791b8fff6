// JsonNode's reads of nlohmann values, and what is not on the hot path for tapes.
#include "core/values/json_node.h"

#include <algorithm>

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

// The tape's words of numbers hold their bits in the next word.
template <typename T>
T NumberAt(const JsonTape& tape, uint64_t i) {
  T v;
  std::memcpy(&v, &tape.words[i + 1], sizeof v);
  return v;
}

}  // namespace

JsonNode::JsonNode(const json& value) : a_(reinterpret_cast<uint64_t>(&value)), type_(TypeOf(value)) {}

JsonNode JsonNode::JsonItem(const json* at, const json* end) {
  JsonNode n(*at);
  n.b_ = reinterpret_cast<uint64_t>(end);
  return n;
}

JsonNode JsonNode::FindInJson(std::string_view key) const {
  auto it = Json().find(key);
  if (it == Json().end() || it->is_null()) return {};
  return *it;
}

std::vector<std::pair<std::string_view, JsonNode>> JsonNode::Members() const {
  std::vector<std::pair<std::string_view, JsonNode>> out;
  if (type_ != Type::kObject) return out;
  if (!tape_) {
    for (const auto& [key, value] : Json().get_ref<const json::object_t&>()) out.emplace_back(key, value);
    return out;
  }
  for (uint64_t k = a_ + 1; TapeType(k) != '}'; k = TapeAfter(k + 1)) {
    out.emplace_back(TapeString(k), JsonNode(*tape_, k + 1));
  }
  // By key, as nlohmann's objects and Go's encoding/json order them, so that what the core
  // makes of an object never depends on how its text ordered its keys; of a key given twice,
  // its last value, as Find reads it. The API server's JSON comes sorted: one comparison per
  // member then, and nothing moves.
  bool sorted = true, unique = true;
  for (size_t i = 1; i < out.size() && sorted; ++i) {
    const int order = out[i - 1].first.compare(out[i].first);
    sorted = order <= 0;
    unique = unique && order != 0;
  }
  if (sorted && unique) return out;
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;  // of each run of one key, its last
  for (size_t i = 0; i < out.size(); ++i) {
    if (i + 1 == out.size() || out[i].first != out[i + 1].first) out[kept++] = out[i];
  }
  out.resize(kept);
  return out;
}

bool JsonNode::Bool() const {
  if (type_ != Type::kBool) return false;
  return tape_ ? TapeType(a_) == 't' : Json().get<bool>();
}

int64_t JsonNode::Integer() const {
  if (type_ != Type::kInteger) return 0;
  return tape_ ? NumberAt<int64_t>(*tape_, a_) : Json().get<int64_t>();  // 'u' wraps as get<int64_t>
}

json JsonNode::Copy() const {
  if (!tape_) return type_ == Type::kAbsent ? json() : Json();
  switch (TapeType(a_)) {
    case '{': {
      json out = json::object();
      for (const auto& [key, value] : Members()) out[std::string(key)] = value.Copy();
      return out;
    }
    case '[': {
      json out = json::array();
      for (JsonNode item : Items()) out.push_back(item.Copy());
      return out;
    }
    case '"': return std::string(String());
    case 'l': return NumberAt<int64_t>(*tape_, a_);
    case 'u': return NumberAt<uint64_t>(*tape_, a_);
    case 'd': return NumberAt<double>(*tape_, a_);
    case 't': return true;
    case 'f': return false;
    default: return nullptr;
  }
}

// Follows the pointer step by step: a list takes its step as an index.
JsonNode FollowPointer(JsonNode root, std::string_view pointer) {
  JsonNode cur = root;
  while (cur && !pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    size_t next = pointer.find('/');
    std::string_view key = pointer.substr(0, next);
    if (cur.IsArray()) {
      size_t index = 0;
      for (char c : key) index = index * 10 + static_cast<size_t>(c - '0');
      JsonNode at;
      for (JsonNode item : cur.Items()) {
        if (index-- == 0) {
          at = item;
          break;
        }
      }
      cur = at;
    } else {
      cur = cur.Find(key);
    }
    if (next == std::string_view::npos) break;
    pointer.remove_prefix(next);
  }
  return cur;
}

}  // namespace shmguard
