// ParseCount, ReadCountAnnotation, ReadQuantityField, ReadSizeField.
#include "core/values/field_values.h"

#include <cmath>

#include "core/values/quantity.h"

namespace shmguard {

std::string Joined(std::initializer_list<std::string_view> pieces) {
  std::string out;
  for (std::string_view p : pieces) out += p;
  return out;
}

Result<int64_t> ReadQuantityField(JsonNode value, std::initializer_list<std::string_view> pointer) {
  std::string dumped;
  std::string_view text;
  if (!value) return int64_t{0};
  if (value.IsInteger()) {
    dumped = value.Dump();
    text = dumped;
  } else if (value.IsFloat()) {
    // A number past a double's range (1e309) reads as infinity, which JSON writes as null: say
    // what it is rather than quote a text the object does not hold.
    if (const nlohmann::json copy = value.Copy(); !std::isfinite(copy.get<double>())) {
      return MakeError(Code::kInvalidInput, "is a number out of range: write a quantity such as \"16Gi\"",
                       Location::Pointer(Joined(pointer)));
    }
    dumped = value.Dump();
    if (dumped.find_first_of(".eE") == std::string::npos) dumped += ".0";
    text = dumped;
  } else if (value.IsString()) {
    text = value.String();
    size_t b = text.find_first_not_of(" \t\r\n");
    size_t e = text.find_last_not_of(" \t\r\n");
    text = b == std::string_view::npos ? std::string_view() : text.substr(b, e - b + 1);
  } else {
    return MakeError(Code::kInvalidInput, "must be a quantity string such as \"16Gi\"",
                     Location::Pointer(Joined(pointer)));
  }
  auto q = ParseQuantity(text);
  if (!q) return MakeError(Code::kInvalidInput, q.error().message, Location::Pointer(Joined(pointer)));
  auto v = QuantityValue(*q);
  if (!v) return MakeError(Code::kInvalidInput, v.error().message, Location::Pointer(Joined(pointer)));
  return *v;
}

Result<int64_t> ReadSizeField(JsonNode value, std::initializer_list<std::string_view> pointer) {
  auto bytes = ReadQuantityField(value, pointer);
  if (bytes && *bytes < 0) {
    return MakeError(Code::kInvalidInput, "must not be negative (the API server refuses it)",
                     Location::Pointer(Joined(pointer)));
  }
  return bytes;
}

std::optional<int64_t> ParseCount(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

Result<std::optional<int64_t>> ReadCountAnnotation(const Annotations& a, const std::string& key, int64_t min,
                                                   int64_t max) {
  auto it = a.find(key);
  if (it == a.end() || !it->second) return std::optional<int64_t>();
  const Location where = Location::Annotation(key);
  if (!it->second.IsString()) {
    return MakeError(Code::kInvalidInput, "annotation values must be strings: quote it (\"" + it->second.Dump() + "\")",
                     where);
  }
  std::string text(it->second.String());
  auto n = ParseCount(text);
  if (!n || *n < min || *n > max) {
    return MakeError(
        Code::kInvalidInput,
        "\"" + text + "\" must be a whole number from " + std::to_string(min) + " to " + std::to_string(max), where);
  }
  return std::optional<int64_t>(*n);
}

}  // namespace shmguard
