// YamlToJson / JsonToYaml with go-yaml v2's scalar resolution (resolve.go).
#include "io/yaml_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace shmguard::io {
namespace {

using nlohmann::json;
constexpr size_t kMaxNodes = 5'000'000;
constexpr int kMaxDepth = 128;  // as for JSON input; also stops an alias nested in its own anchor

// True when `s` is well-formed UTF-8 (RFC 3629: no overlongs, surrogates or code points past
// U+10FFFF). YAML text must be Unicode; yaml-cpp passes bytes through unchecked.
bool IsValidUtf8(const std::string& s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    uint32_t cp = c & (0xFF >> (len + 1));
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

bool IsOneOf(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
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
    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
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

class Converter {
 public:
  explicit Converter(int line_offset) : line_offset_(line_offset) {}

  Result<json> Convert(const YAML::Node& node) {
    if (++nodes_ > kMaxNodes) {
      return MakeError(Code::kInvalidInput,
                       "document expands to more than 5 million nodes (alias bomb?)", Where(node));
    }
    struct DepthGuard {
      int& d;
      explicit DepthGuard(int& depth) : d(++depth) {}
      ~DepthGuard() { --d; }
    } guard(depth_);
    if (depth_ > kMaxDepth) {
      return MakeError(Code::kInvalidInput,
                       "nested deeper than " + std::to_string(kMaxDepth) + " levels (an alias inside its own anchor?)",
                       Where(node));
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return json(nullptr);
      case YAML::NodeType::Scalar:
        return Scalar(node);
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& item : node) {
          auto v = Convert(item);
          if (!v) return v;
          out.push_back(std::move(*v));
        }
        return out;
      }
      case YAML::NodeType::Map:
        return Map(node);
    }
    return json(nullptr);
  }

 private:
  std::string Where(const YAML::Node& node) const {
    return "line " + std::to_string(node.Mark().line + 1 + line_offset_);
  }

  Result<json> Scalar(const YAML::Node& node) {
    const std::string& text = node.Scalar();
    if (!IsValidUtf8(text)) return MakeError(Code::kInvalidInput, "invalid UTF-8 in a value", Where(node));
    const std::string& tag = node.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return json(text);
    if (tag == "?" || tag.empty()) return ResolvePlainScalar(text);
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
      return ResolvePlainScalar(text);
    }
    return json(text);  // custom tags: keep the text
  }

  Result<json> Map(const YAML::Node& node) {
    json out = json::object();
    std::vector<YAML::Node> merges;
    for (const auto& kv : node) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) {
        return MakeError(Code::kInvalidInput,
                         "mapping key is not a plain value (an unrendered template such as "
                         "{{ x }}?)",
                         Where(key));
      }
      if (!IsValidUtf8(key.Scalar())) return MakeError(Code::kInvalidInput, "invalid UTF-8 in a key", Where(key));
      if (key.Scalar() == "<<" && key.Tag() == "?") {
        merges.push_back(kv.second);
        continue;
      }
      if (out.contains(key.Scalar())) {
        return MakeError(Code::kInvalidInput, "duplicate key \"" + key.Scalar() + "\"", Where(key));
      }
      auto v = Convert(kv.second);
      if (!v) return v;
      out[key.Scalar()] = std::move(*v);
    }
    for (const auto& m : merges) {  // YAML merge keys: explicit keys win
      std::vector<YAML::Node> sources;
      if (m.IsSequence()) {
        for (const auto& s : m) sources.push_back(s);
      } else {
        sources.push_back(m);
      }
      for (const auto& s : sources) {
        auto v = Convert(s);
        if (!v) return v;
        if (!v->is_object()) {
          return MakeError(Code::kInvalidInput, "merge key \"<<\" needs a mapping", Where(s));
        }
        for (auto it = v->begin(); it != v->end(); ++it) {
          if (!out.contains(it.key())) out[it.key()] = it.value();
        }
      }
    }
    return out;
  }

  int line_offset_;
  size_t nodes_ = 0;
  int depth_ = 0;
};

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  if (!ResolvePlainScalar(s).is_string()) return true;
  static const std::string kSpecialStart = "-?:,[]{}#&*!|>'\"%@` ";
  if (kSpecialStart.find(s[0]) != std::string::npos) return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  if (s.back() == ' ' || s.back() == ':') return true;
  return false;
}

void Emit(YAML::Emitter& e, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      e << YAML::BeginMap;
      for (auto it = v.begin(); it != v.end(); ++it) {
        e << YAML::Key;
        if (NeedsQuotes(it.key())) {
          e << YAML::DoubleQuoted << it.key();
        } else {
          e << it.key();
        }
        e << YAML::Value;
        Emit(e, it.value());
      }
      e << YAML::EndMap;
      break;
    case json::value_t::array:
      e << YAML::BeginSeq;
      for (const auto& item : v) Emit(e, item);
      e << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      // A literal block reads back with one final newline ("clip"), so only strings that end
      // in exactly one newline use it; other multi-line strings are double-quoted with \n.
      bool literal = s.size() >= 2 && s.back() == '\n' && s[s.size() - 2] != '\n' &&
                     s.find_first_of("\t\r") == std::string::npos && s.front() != ' ';
      if (literal) {
        e << YAML::Literal << s;
      } else if (NeedsQuotes(s)) {
        e << YAML::DoubleQuoted << s;
      } else {
        e << s;
      }
      break;
    }
    case json::value_t::null:
      e << YAML::Null;
      break;
    case json::value_t::boolean:
      e << (v.get<bool>() ? "true" : "false");
      break;
    default:
      e << v.dump();
  }
}

}  // namespace

json ResolvePlainScalar(const std::string& s) {
  if (IsOneOf(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (IsOneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    return true;
  }
  if (IsOneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    return false;
  }
  char c = s[0];
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
    json out;
    if (ParseYamlInt(s, out)) return out;
    if (ParseYamlFloat(s, out)) return out;
  }
  return s;
}

Result<json> YamlToJson(const YAML::Node& node, int line_offset) {
  Converter c(line_offset);
  return c.Convert(node);
}

std::string JsonToYaml(const json& value) {
  YAML::Emitter e;
  e.SetIndent(2);
  e.SetSeqFormat(YAML::Block);
  Emit(e, value);
  std::string out = e.c_str();
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

}  // namespace shmguard::io
