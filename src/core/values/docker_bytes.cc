// Docker's byte values: go-units RAMInBytes (parse) and the shortest form it reads back (format).
#include "core/values/docker_bytes.h"

#include <charconv>
#include <cmath>

namespace shmguard {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

Result<int64_t> ParseDockerBytes(std::string_view text, std::string_view where) {
  auto invalid = [&](std::string why) {
    return MakeError(Code::kInvalidInput,
                     "\"" + std::string(text) + "\" is not a size Docker reads (" + why +
                         "): write bytes, or a number with k, m, g, t or p (\"2g\", \"512m\")",
                     Location::Pointer(std::string(where)));
  };
  // (?i)^(\d+(\.\d+)*) ?([kmgtp])?i?b?$ — go-units size.go — then strconv.ParseFloat.
  size_t i = 0;
  while (i < text.size() && IsDigit(text[i])) ++i;
  if (i == 0) return invalid("it must start with a digit");
  int dots = 0;
  while (i + 1 < text.size() && text[i] == '.' && IsDigit(text[i + 1])) {
    ++dots;
    ++i;
    while (i < text.size() && IsDigit(text[i])) ++i;
  }
  const std::string_view amount = text.substr(0, i);
  if (i < text.size() && text[i] == ' ') ++i;
  double multiple = 1;
  if (i < text.size()) {
    const char* units = "kmgtp";
    for (int u = 0; units[u]; ++u) {
      if (Lower(text[i]) == units[u]) {
        multiple = std::ldexp(1.0, 10 * (u + 1));
        ++i;
        break;
      }
    }
  }
  if (i < text.size() && Lower(text[i]) == 'i') ++i;
  if (i < text.size() && Lower(text[i]) == 'b') ++i;
  if (i != text.size()) return invalid("unknown unit");
  if (dots > 1) return invalid("more than one decimal point");
  double value = 0;
  auto [end, ec] = std::from_chars(amount.data(), amount.data() + amount.size(), value);
  if (ec != std::errc() || end != amount.data() + amount.size()) return invalid("the number is out of range");
  value *= multiple;
  if (!(value < 9223372036854775808.0)) return invalid("more than 2^63-1 bytes");
  return static_cast<int64_t>(value);  // truncated, as Go's int64(float64)
}

Result<int64_t> ReadComposeBytes(JsonNode value, const std::string& pointer) {
  if (value.IsInteger()) {
    if (value.Integer() < 0) return MakeError(Code::kInvalidInput, "must not be negative", Location::Pointer(pointer));
    return value.Integer();
  }
  if (value.IsString()) return ParseDockerBytes(value.String(), pointer);
  return MakeError(Code::kInvalidInput, "must be a number of bytes or a size such as \"2g\"",
                   Location::Pointer(pointer));
}

std::string FormatDockerBytes(int64_t bytes) {
  const char* units = "ptgmk";
  for (int u = 0; units[u]; ++u) {
    const int64_t multiple = int64_t{1} << (10 * (5 - u));
    if (bytes >= multiple && bytes % multiple == 0) return std::to_string(bytes / multiple) + units[u];
  }
  return std::to_string(bytes);
}

}  // namespace shmguard
