// The tape: one 64-bit word per value (two for numbers, whose bits are in the next word), the
// type in the top byte and a payload in the other 56 bits. '{' and '[' hold in their low 32
// bits the index just past their matching '}' or ']'; a string holds the offset of its length
// (4 bytes, little-endian) and bytes in the document's string buffer. An object's words are its
// keys and values, alternating. The root value is at index 1. JsonNode: a = the document, b = the index.
#include "io/tape_node.h"

#include <cstring>

namespace shmguard::io {
namespace {

using nlohmann::json;
using Document = simdjson::dom::document;

constexpr uint64_t kPayload = 0x00FFFFFFFFFFFFFF;

const Document& Doc(const JsonNode& n) { return *reinterpret_cast<const Document*>(n.a()); }
char TypeAt(const Document& d, uint64_t i) { return static_cast<char>(d.tape[i] >> 56); }

// The index of the value after the one at `i`.
uint64_t After(const Document& d, uint64_t i) {
  switch (TypeAt(d, i)) {
    case '{':
    case '[': return static_cast<uint32_t>(d.tape[i]);
    case 'l':
    case 'u':
    case 'd': return i + 2;
    default: return i + 1;
  }
}

std::string_view StringAt(const Document& d, uint64_t i) {
  const uint8_t* at = d.string_buf.get() + (d.tape[i] & kPayload);
  uint32_t size;
  std::memcpy(&size, at, sizeof size);
  return {reinterpret_cast<const char*>(at + sizeof size), size};
}

template <typename T>
T NumberAt(const Document& d, uint64_t i) {
  T v;
  std::memcpy(&v, &d.tape[i + 1], sizeof v);
  return v;
}

class TapeReader final : public JsonNode::Reader {
 public:
  static JsonNode View(const Document& d, uint64_t i);

  JsonNode Find(const JsonNode& object, std::string_view key) const override {
    const Document& d = Doc(object);
    uint64_t found = 0;  // the value's index; the last of a key given twice, as nlohmann and Go
    for (uint64_t k = object.b() + 1; TypeAt(d, k) != '}'; k = After(d, k + 1)) {
      if (StringAt(d, k) == key) found = k + 1;
    }
    return found && TypeAt(d, found) != 'n' ? View(d, found) : JsonNode();
  }
  JsonNode FirstItem(const JsonNode& array) const override { return ItemAt(Doc(array), array.b() + 1); }
  JsonNode NextItem(const JsonNode& item) const override {
    const Document& d = Doc(item);
    return ItemAt(d, After(d, item.b()));
  }
  std::vector<std::pair<std::string_view, JsonNode>> Members(const JsonNode& object) const override {
    const Document& d = Doc(object);
    std::vector<std::pair<std::string_view, JsonNode>> out;
    for (uint64_t k = object.b() + 1; TypeAt(d, k) != '}'; k = After(d, k + 1)) {
      out.emplace_back(StringAt(d, k), View(d, k + 1));
    }
    return out;
  }
  std::string_view String(const JsonNode& string) const override { return StringAt(Doc(string), string.b()); }
  bool Bool(const JsonNode& boolean) const override { return TypeAt(Doc(boolean), boolean.b()) == 't'; }
  int64_t Integer(const JsonNode& integer) const override {
    return NumberAt<int64_t>(Doc(integer), integer.b());  // a 'u' above 2^63-1 wraps, as get<int64_t>
  }
  json Copy(const JsonNode& node) const override { return CopyAt(Doc(node), node.b()); }

 private:
  static JsonNode ItemAt(const Document& d, uint64_t i) { return TypeAt(d, i) == ']' ? JsonNode() : View(d, i); }

  static json CopyAt(const Document& d, uint64_t i) {
    switch (TypeAt(d, i)) {
      case '{': {
        json out = json::object();
        for (uint64_t k = i + 1; TypeAt(d, k) != '}'; k = After(d, k + 1)) {
          out[std::string(StringAt(d, k))] = CopyAt(d, k + 1);
        }
        return out;
      }
      case '[': {
        json out = json::array();
        for (uint64_t k = i + 1; TypeAt(d, k) != ']'; k = After(d, k)) out.push_back(CopyAt(d, k));
        return out;
      }
      case '"': return std::string(StringAt(d, i));
      case 'l': return NumberAt<int64_t>(d, i);
      case 'u': return NumberAt<uint64_t>(d, i);
      case 'd': return NumberAt<double>(d, i);
      case 't': return true;
      case 'f': return false;
      default: return nullptr;
    }
  }
};

const TapeReader kTapeReader;

JsonNode TapeReader::View(const Document& d, uint64_t i) {
  using Type = JsonNode::Type;
  Type type = Type::kNull;
  switch (TypeAt(d, i)) {
    case '{': type = Type::kObject; break;
    case '[': type = Type::kArray; break;
    case '"': type = Type::kString; break;
    case 'l':
    case 'u': type = Type::kInteger; break;
    case 'd': type = Type::kFloat; break;
    case 't':
    case 'f': type = Type::kBool; break;
    default: type = Type::kNull; break;
  }
  return JsonNode(&kTapeReader, type, reinterpret_cast<uint64_t>(&d), i);
}

}  // namespace

JsonNode TapeRoot(const Document& doc) { return TapeReader::View(doc, 1); }

}  // namespace shmguard::io
