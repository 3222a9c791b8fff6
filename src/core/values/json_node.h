// A read-only view of one value of a parsed JSON document: the core reads Kubernetes objects only
// through JsonNode, never with at() or operator[] (they throw or insert). It views either
//   - a value on a tape in simdjson's documented layout (JsonTape), the one form every input is
//     parsed to: a review in place in the server, a file's document from JSON or YAML (the io
//     layer's Tape). No tree is built, and reads are inline loops over 64-bit words; or
//   - an nlohmann::json value, which converts to a view implicitly (a tree the audit edits, the
//     tests).
// A view is valid while the document it views lives and is not changed.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmguard {

// A parsed document in simdjson's tape layout (its doc/tape.md): one 64-bit word per value (two
// for numbers, whose bits are in the next word), the type in the top byte ('{' '[' '"' 'l' 'u'
// 'd' 't' 'f' 'n', and '}' ']' closing) and a payload below it. '{' and '[' hold in their low 32
// bits the index just past their matching '}' or ']'; a string holds the offset in `strings` of
// its length (4 bytes, little-endian) followed by its bytes. An object's words are its keys and
// values, alternating. The root value is at index 1.
struct JsonTape {
  const uint64_t* words = nullptr;
  const uint8_t* strings = nullptr;

  // Reading the layout, for the view and for what builds or copies a tape (io/tape.h).
  static constexpr uint64_t kPayload = 0x00FFFFFFFFFFFFFF;
  static char Type(uint64_t word) { return static_cast<char>(word >> 56); }
  // The index of the word after the value at `words[i]`.
  static uint64_t After(const uint64_t* words, uint64_t i) {
    switch (Type(words[i])) {
      case '{':
      case '[': return static_cast<uint32_t>(words[i]);
      case 'l':
      case 'u':
      case 'd': return i + 2;
      default: return i + 1;
    }
  }
  // The text of the string word `word`, in `strings`.
  static std::string_view String(const uint8_t* strings, uint64_t word) {
    const uint8_t* at = strings + (word & kPayload);
    uint32_t size;
    std::memcpy(&size, at, sizeof size);
    return {reinterpret_cast<const char*>(at + sizeof size), size};
  }
};

class JsonNode {
 public:
  enum class Type : uint8_t { kAbsent, kNull, kBool, kInteger, kFloat, kString, kArray, kObject };
  class ItemIterator;
  struct ItemRange;

  JsonNode() = default;                   // absent
  JsonNode(const nlohmann::json& value);  // NOLINT(google-explicit-constructor): a view of it
  // The root value of `tape`. REQUIRES: `tape` and its buffers outlive the view.
  static JsonNode Root(const JsonTape& tape) { return JsonNode(tape, 1); }

  Type type() const { return type_; }
  // Present and not null: Kubernetes treats a null field as an absent one.
  explicit operator bool() const { return type_ != Type::kAbsent && type_ != Type::kNull; }
  bool IsNull() const { return type_ == Type::kNull; }
  bool IsBool() const { return type_ == Type::kBool; }
  bool IsInteger() const { return type_ == Type::kInteger; }
  bool IsFloat() const { return type_ == Type::kFloat; }
  bool IsString() const { return type_ == Type::kString; }
  bool IsArray() const { return type_ == Type::kArray; }
  bool IsObject() const { return type_ == Type::kObject; }

  // The member `key` of an object; absent when this is not an object, has no such member, or
  // the member is null. A key given twice means its last value, as in nlohmann and Go.
  JsonNode Find(std::string_view key) const {
    if (type_ != Type::kObject) return {};
    return tape_ ? FindOnTape(key) : FindInJson(key);
  }
  // The items of a list, in order, for a range-for (nothing is copied); none when this is not
  // a list.
  ItemRange Items() const;
  // The members of an object, null ones included, by key (as nlohmann and Go's encoding/json
  // order them, whatever the text's order; a key given twice once, with its last value).
  std::vector<std::pair<std::string_view, JsonNode>> Members() const;
  // The text of a string; "" when this is not a string.
  std::string_view String() const {
    if (type_ != Type::kString) return {};
    return tape_ ? TapeString(a_) : std::string_view(Json().get_ref<const std::string&>());
  }
  bool Bool() const;
  // An integer's value (one above 2^63-1 wraps, as nlohmann's get<int64_t> does); 0 otherwise.
  int64_t Integer() const;
  // The string member `key`, or "" when it is missing or not a string.
  std::string_view StringMember(std::string_view key) const { return Find(key).String(); }
  // True when this is the string `text`.
  bool Is(std::string_view text) const { return IsString() && String() == text; }

  // A copy as nlohmann::json (null when absent), for messages and patch values.
  nlohmann::json Copy() const;
  std::string Dump() const { return Copy().dump(); }

 private:
  // nlohmann: a_ = the value's address, b_ = for an item of a list, the address past the last.
  // Tape: tape_ = the document, a_ = the value's word.
  JsonNode(const JsonTape& tape, uint64_t index);
  const nlohmann::json& Json() const { return *reinterpret_cast<const nlohmann::json*>(a_); }
  static JsonNode JsonItem(const nlohmann::json* at, const nlohmann::json* end);
  JsonNode FindInJson(std::string_view key) const;
  JsonNode NextItem() const;

  char TapeType(uint64_t i) const { return JsonTape::Type(tape_->words[i]); }
  uint64_t TapeAfter(uint64_t i) const { return JsonTape::After(tape_->words, i); }
  std::string_view TapeString(uint64_t i) const { return JsonTape::String(tape_->strings, tape_->words[i]); }
  JsonNode FindOnTape(std::string_view key) const {
    uint64_t found = 0;
    for (uint64_t k = a_ + 1; TapeType(k) != '}'; k = TapeAfter(k + 1)) {
      // Compared over key.size(), which is a constant where Find is inlined with a literal: the
      // compiler then compares in registers instead of calling memcmp.
      const std::string_view name = TapeString(k);
      if (name.size() == key.size() && std::memcmp(name.data(), key.data(), key.size()) == 0) found = k + 1;
    }
    return found && TapeType(found) != 'n' ? JsonNode(*tape_, found) : JsonNode();
  }

  const JsonTape* tape_ = nullptr;
  uint64_t a_ = 0, b_ = 0;
  Type type_ = Type::kAbsent;
};

class JsonNode::ItemIterator {
 public:
  explicit ItemIterator(JsonNode at) : at_(at) {}
  JsonNode operator*() const { return at_; }
  ItemIterator& operator++() {
    at_ = at_.NextItem();
    return *this;
  }
  bool operator==(std::default_sentinel_t) const { return at_.type_ == Type::kAbsent; }

 private:
  JsonNode at_;
};

struct JsonNode::ItemRange {
  JsonNode first;
  ItemIterator begin() const { return ItemIterator(first); }
  std::default_sentinel_t end() const { return {}; }
};

namespace values {
// simdjson's tape type byte -> JsonNode::Type: one load, so the constructor stays small enough
// to inline into every loop over items.
constexpr std::array<JsonNode::Type, 256> TapeTypes() {
  std::array<JsonNode::Type, 256> t{};
  t.fill(JsonNode::Type::kNull);
  t['{'] = JsonNode::Type::kObject;
  t['['] = JsonNode::Type::kArray;
  t['"'] = JsonNode::Type::kString;
  t['l'] = t['u'] = JsonNode::Type::kInteger;
  t['d'] = JsonNode::Type::kFloat;
  t['t'] = t['f'] = JsonNode::Type::kBool;
  return t;
}
inline constexpr std::array<JsonNode::Type, 256> kTapeTypes = TapeTypes();
}  // namespace values

inline JsonNode::JsonNode(const JsonTape& tape, uint64_t index)
    : tape_(&tape), a_(index), type_(values::kTapeTypes[static_cast<uint8_t>(TapeType(index))]) {}

inline JsonNode::ItemRange JsonNode::Items() const {
  if (type_ != Type::kArray) return {};
  if (!tape_) {
    const auto& items = Json().get_ref<const nlohmann::json::array_t&>();
    return {items.empty() ? JsonNode() : JsonItem(items.data(), items.data() + items.size())};
  }
  return {TapeType(a_ + 1) == ']' ? JsonNode() : JsonNode(*tape_, a_ + 1)};
}

inline JsonNode JsonNode::NextItem() const {
  if (!tape_) {
    const auto* end = reinterpret_cast<const nlohmann::json*>(b_);
    const nlohmann::json* next = &Json() + 1;
    return next == end ? JsonNode() : JsonItem(next, end);
  }
  const uint64_t next = TapeAfter(a_);
  return TapeType(next) == ']' ? JsonNode() : JsonNode(*tape_, next);
}

// The value at `pointer`, a JSON pointer of unescaped object keys and list indexes
// ("/spec/replicatedJobs/0"); absent when any step is missing.
JsonNode FollowPointer(JsonNode root, std::string_view pointer);

}  // namespace shmguard
