// ResolvePlainScalar and NeedsQuotes: go-yaml v2's scalar resolution (resolve.go), YAML 1.1.
#include "io/formats/yaml_scalar.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <initializer_list>

namespace shmguard::io {
namespace {

using nlohmann::json;

bool IsOneOf(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words) {
    if (s == w) return true;
  }
  return false;
}

// go-yaml v2 strconv.ParseInt(s, 0, 64) after removing '_': decimal, 0x, 0o/0 octal, 0b.
bool ParseYamlInt(std::string s, json& out) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return false;
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i >= s.size()) return false;
  int base = 10;
  std::string digits = s.substr(i);
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits = digits.substr(2);
  } else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) {
    base = 2;
    digits = digits.substr(2);
  } else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O')) {
    base = 8;
    digits = digits.substr(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits = digits.substr(1);
  }
  for (char c : digits) {
    int v = std::isdigit(static_cast<unsigned char>(c))    ? c - '0'
            : std::isxdigit(static_cast<unsigned char>(c)) ? (std::tolower(c) - 'a' + 10)
                                                           : 99;
    if (v >= base) return false;
  }
  errno = 0;
  char* end = nullptr;
  if (s[0] == '-') {
    long long v = std::strtoll(("-" + digits).c_str(), &end, base);
    if (errno == ERANGE) return false;
    out = static_cast<int64_t>(v);
  } else {
    unsigned long long v = std::strtoull(digits.c_str(), &end, base);
    if (errno == ERANGE) return false;
    if (v <= static_cast<unsigned long long>(INT64_MAX)) {
      out = static_cast<int64_t>(v);
    } else {
      out = static_cast<uint64_t>(v);
    }
  }
  return true;
}

bool ParseYamlFloat(const std::string& s, json& out) {
  if (IsOneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    out = INFINITY;
    return true;
  }
  if (IsOneOf(s, {"-.inf", "-.Inf", "-.INF"})) {
    out = -INFINITY;
    return true;
  }
  if (IsOneOf(s, {".nan", ".NaN", ".NAN"})) {
    out = NAN;
    return true;
  }
  // [-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?
  size_t i = 0, n = s.size();
  if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < n && (std::isdigit(static_cast<unsigned char>(s[i])) || (int_digits && s[i] == '_'))) {
    ++i;
    ++int_digits;
  }
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '_')) {
      ++i;
      ++frac_digits;
    }
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      ++exp_digits;
    }
    if (exp_digits == 0) return false;
  }
  if (i != n) return false;
  std::string clean = s;
  clean.erase(std::remove(clean.begin(), clean.end(), '_'), clean.end());
  out = std::strtod(clean.c_str(), nullptr);
  return true;
}

}  // namespace

json ResolvePlainScalar(std::string_view s) {
  if (s.size() <= 5) {  // the longest null or bool word is "false"
    if (IsOneOf(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
    if (IsOneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
      return true;
    }
    if (IsOneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
      return false;
    }
  }
  char c = s[0];
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
    json out;
    std::string text(s);
    if (ParseYamlInt(text, out)) return out;
    if (ParseYamlFloat(text, out)) return out;
  }
  return s;
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  // YAML 1.1's merge key and value key: go-yaml v2 (kubectl's reader) reads a plain "<<" key as a
  // merge of the value below it, and other YAML 1.1 readers "=" as the default value.
  if (s == "<<" || s == "=") return true;
  if (!ResolvePlainScalar(s).is_string()) return true;
  static const std::string kSpecialStart = "-?:,[]{}#&*!|>'\"%@` ";
  if (kSpecialStart.find(s[0]) != std::string::npos) return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  if (s.back() == ' ' || s.back() == ':') return true;
  return false;
}

}  // namespace shmguard::io
