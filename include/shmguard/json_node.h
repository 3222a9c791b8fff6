// A read-only view of one value of a parsed JSON document, whichever parser holds it: the core
// reads Kubernetes objects only through JsonNode, never with at() or operator[] (they throw or
// insert). nlohmann::json converts to a view implicitly (YAML, the audit, the tests); the server
// views simdjson's document directly (src/io/json_dom.h), so no tree is built per request.
// A view is valid while the document it views lives and is not changed.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace shmguard {

class JsonNode {
 public:
  enum class Type : uint8_t { kAbsent, kNull, kBool, kInteger, kFloat, kString, kArray, kObject };

  // How one parser's values are read. `a` and `b` are the parser's handle of the value.
  class Reader {
   public:
    virtual JsonNode Find(const JsonNode& object, std::string_view key) const = 0;
    // The first item of a non-empty list, and the item after an item; absent at the end.
    virtual JsonNode FirstItem(const JsonNode& array) const = 0;
    virtual JsonNode NextItem(const JsonNode& item) const = 0;
    virtual std::vector<std::pair<std::string_view, JsonNode>> Members(const JsonNode& object) const = 0;
    virtual std::string_view String(const JsonNode& string) const = 0;
    virtual bool Bool(const JsonNode& boolean) const = 0;
    virtual int64_t Integer(const JsonNode& integer) const = 0;
    virtual nlohmann::json Copy(const JsonNode& node) const = 0;

   protected:
    ~Reader() = default;
  };

  class ItemIterator;
  struct ItemRange;

  JsonNode() = default;  // absent
  JsonNode(const nlohmann::json& value);  // NOLINT(google-explicit-constructor): a view of it
  JsonNode(const Reader* reader, Type type, uint64_t a, uint64_t b)
      : reader_(reader), a_(a), b_(b), type_(type) {}

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
  // the member is null. A key given twice means its last value, as in Go's encoding/json.
  JsonNode Find(std::string_view key) const {
    return type_ == Type::kObject ? reader_->Find(*this, key) : JsonNode();
  }
  // The items of a list, in order, for a range-for (nothing is copied); none when this is not
  // a list.
  ItemRange Items() const;
  // The members of an object, null ones included, in the document's order (nlohmann: sorted).
  std::vector<std::pair<std::string_view, JsonNode>> Members() const {
    return type_ == Type::kObject ? reader_->Members(*this)
                                  : std::vector<std::pair<std::string_view, JsonNode>>();
  }
  // The text of a string; "" when this is not a string.
  std::string_view String() const { return type_ == Type::kString ? reader_->String(*this) : ""; }
  bool Bool() const { return type_ == Type::kBool && reader_->Bool(*this); }
  // An integer's value (one above 2^63-1 wraps, as nlohmann's get<int64_t> does); 0 otherwise.
  int64_t Integer() const { return type_ == Type::kInteger ? reader_->Integer(*this) : 0; }
  // The string member `key`, or "" when it is missing or not a string.
  std::string_view StringMember(std::string_view key) const { return Find(key).String(); }
  // True when this is the string `text`.
  bool Is(std::string_view text) const { return IsString() && String() == text; }

  // A copy as nlohmann::json (null when absent), for messages and patch values.
  nlohmann::json Copy() const { return reader_ ? reader_->Copy(*this) : nlohmann::json(); }
  std::string Dump() const { return Copy().dump(); }

  uint64_t a() const { return a_; }
  uint64_t b() const { return b_; }

 private:
  const Reader* reader_ = nullptr;
  uint64_t a_ = 0, b_ = 0;
  Type type_ = Type::kAbsent;
};

class JsonNode::ItemIterator {
 public:
  explicit ItemIterator(JsonNode at) : at_(at) {}
  JsonNode operator*() const { return at_; }
  ItemIterator& operator++() {
    at_ = at_.reader_->NextItem(at_);
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

inline JsonNode::ItemRange JsonNode::Items() const {
  return {type_ == Type::kArray ? reader_->FirstItem(*this) : JsonNode()};
}

}  // namespace shmguard
