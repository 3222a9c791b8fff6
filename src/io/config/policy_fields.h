// FieldReader: the fields of a YAML document read strictly, each error naming its line (the
// policy file's readers, config.cc, are built on it). Internal to io.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/shm_plan.h"
#include "core/policy/policy.h"
#include "core/values/glob.h"
#include "core/values/human_units.h"
#include "core/values/json_patch.h"
#include "core/values/quantity.h"
#include "core/values/result.h"
#include "io/formats/yaml_json.h"

namespace shmguard::io {

using Type = JsonNode::Type;

// A node of the document: its value and JSON pointer (for its line).
struct Node {
  JsonNode v;
  std::string pointer;
  // The members of a mapping, by key, each with its pointer.
  std::vector<std::pair<std::string, Node>> Members() const {
    std::vector<std::pair<std::string, Node>> out;
    for (const auto& [key, value] : v.Members()) {
      out.emplace_back(std::string(key), Node{value, pointer + "/" + EscapePointerToken(key)});
    }
    return out;
  }
  // The items of a list, each with its pointer.
  std::vector<Node> Items() const {
    std::vector<Node> out;
    for (JsonNode item : v.Items()) out.push_back({item, pointer + "/" + std::to_string(out.size())});
    return out;
  }
};

// Reads fields of the document `doc`, named `name` in errors. Each reader returns false when the
// field is wrong, with error_ set to the first error, naming the field's key and line.
class FieldReader {
 public:
  FieldReader(std::string name, const YamlText& doc) : name_(std::move(name)), doc_(doc) {}

 protected:
  bool FailB(const Node& n, const std::string& key, const std::string& msg) {
    Fail(n, key, msg);
    return false;
  }
  Error Fail(const Node& n, const std::string& key, const std::string& msg) {
    error_ = MakeError(Code::kInvalidInput, key + ": " + msg, Location::Line(doc_.Line(n.pointer), name_));
    return *error_;
  }

  bool Expect(const Node& n, Type type, const std::string& key, const char* what) {
    if (n.v.type() == type) return true;
    std::string msg = "must be ";
    msg.append(what);
    return FailB(n, key, msg);
  }

  bool Scalar(const Node& n, const std::string& key, std::string& out) {
    if (!Expect(n, Type::kString, key, "a single value")) return false;
    out = n.v.String();
    return true;
  }

  template <typename E, size_t N>
  bool Enum(const Node& n, const std::string& key, E& out, const E (&values)[N], const char* (*name)(E)) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    if (auto v = FindByName(values, name, s)) {
      out = *v;
      return true;
    }
    std::string allowed;
    for (E v : values) allowed += (allowed.empty() ? "" : ", ") + std::string(name(v));
    return FailB(n, key, "must be one of " + allowed + ", got \"" + s + "\"");
  }

  // ipcLock: auto | always | all | never, and "gpu-containers", the name `always` had before
  // `auto` existed (every GPU container), so older policies keep their meaning.
  bool IpcLock(const Node& n, const std::string& key, IpcLockMode& out) {
    if (n.v.Is("gpu-containers")) {
      out = IpcLockMode::kAlways;
      return true;
    }
    return Enum(n, key, out, kIpcLockModes, IpcLockModeName);
  }

  bool Selection(const Node& n, const std::string& key, ContainerSelection& out) {
    return Enum(n, key, out, kContainerSelections, ContainerSelectionName);
  }

  bool Bool(const Node& n, const std::string& key, bool& out) {
    static constexpr bool kBools[] = {true, false};
    return Enum(
        n, key, out, kBools, +[](bool b) { return b ? "true" : "false"; });
  }

  // A list of strings; with `globs`, of namespace globs, where one glob may also be written
  // without brackets.
  // What a list of strings holds, checked as it is read.
  enum class Entries {
    kWords,           // any non-empty string
    kNamespaceGlobs,  // fnmatch globs of namespace names (GlobRegex); a single string is a list of one
    kResourceGlobs,   // fnmatch globs of resource names (GlobRegex)
    kResourceNames,   // resource names as Kubernetes qualifies them: [prefix/]name
  };
  bool StringList(const Node& n, const std::string& key, std::vector<std::string>& out, Entries entries) {
    const bool one = entries == Entries::kNamespaceGlobs && n.v.IsString();
    if (!one && !Expect(n, Type::kArray, key, "a list")) return false;
    out.clear();
    for (const Node& item : one ? std::vector<Node>{n} : n.Items()) {
      std::string s;
      if (!Scalar(item, key, s)) return false;
      if (s.empty()) return FailB(item, key, "entries must not be empty");
      if (entries == Entries::kNamespaceGlobs && !NamespaceGlobChars(s)) {
        return FailB(
            item, key,
            "\"" + s + "\" is not a namespace glob (lowercase letters, digits, '-', '.', '*', '?', and [...] classes)");
      }
      if (entries == Entries::kNamespaceGlobs || entries == Entries::kResourceGlobs) {
        // Read as the webhook's fnmatch and policy mode's RE2 would both read it, or refused.
        if (auto regex = GlobRegex(s); !regex) return FailB(item, key, regex.error().message);
      } else if (entries == Entries::kResourceNames && !IsResourceName(s)) {
        return FailB(item, key,
                     "\"" + s + "\" is not a resource name ([DNS subdomain/]name of letters, digits, '-', '_', '.')");
      }
      out.push_back(s);
    }
    return true;
  }

  // Outside its [...] classes a namespace glob holds only what a namespace name can (a DNS label)
  // and the wildcards.
  static bool NamespaceGlobChars(const std::string& g) {
    int depth = 0;
    for (char c : g) {
      if (c == '[') depth = 1;
      if (depth) {
        if (c == ']') depth = 0;
        continue;
      }
      const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '*' || c == '?' || c == '.';
      if (!ok) return false;
    }
    return true;
  }

  // A qualified name as Kubernetes validates a resource name (IsQualifiedName): an optional DNS
  // subdomain prefix and '/', then 1 to 63 of [A-Za-z0-9-_.], starting and ending alphanumeric.
  static bool IsResourceName(const std::string& s) {
    const size_t slash = s.find('/');
    std::string_view prefix = slash == std::string::npos ? "" : std::string_view(s).substr(0, slash);
    std::string_view name = slash == std::string::npos ? std::string_view(s) : std::string_view(s).substr(slash + 1);
    auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    if (slash != std::string::npos) {
      if (prefix.empty() || prefix.size() > 253) return false;
      for (char c : prefix) {
        if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
              c == '.')) {
          return false;
        }
      }
      if (!alnum(prefix.front()) || !alnum(prefix.back())) return false;
    }
    if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) return false;
    for (char c : name) {
      if (!(alnum(c) || c == '-' || c == '_' || c == '.')) return false;
    }
    return true;
  }

  // A decimal such as 0.5 or 1.2, exactly, in millionths, within [min, max].
  bool Decimal(const Node& n, const std::string& key, int64_t min, int64_t max, int64_t& out) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    int64_t whole = 0, frac = 0, scale = 1'000'000;
    size_t i = 0;
    bool digits = false;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && whole < 1'000'000; ++i) {
      whole = whole * 10 + (s[i] - '0');
      digits = true;
    }
    if (i < s.size() && s[i] == '.') {
      for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && scale > 1; ++i) {
        scale /= 10;
        frac += (s[i] - '0') * scale;
        digits = true;
      }
    }
    int64_t v = whole * 1'000'000 + frac;
    if (!digits || i != s.size() || v < min || v > max) {
      return FailB(n, key,
                   "must be a decimal number from " + FormatPpm(min) + " to " + FormatPpm(max) +
                       " (at most 6 decimals), got \"" + s + "\"");
    }
    out = v;
    return true;
  }

  bool Count(const Node& n, const std::string& key, int64_t min, int64_t max, int64_t& out) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    int64_t v = 0;
    bool ok = !s.empty() && s.size() <= 18;
    for (char c : s) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (ok) v = std::stoll(s);
    if (!ok || v < min || v > max) {
      return FailB(
          n, key,
          "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got \"" + s + "\"");
    }
    out = v;
    return true;
  }

  bool Bytes(const Node& n, const std::string& key, int64_t& out) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    auto v = ParseBytes(s, key);
    if (!v) return FailB(n, key, v.error().message);
    out = *v;
    return true;
  }

  std::string name_;
  const YamlText& doc_;
  std::optional<Error> error_;
};

}  // namespace shmguard::io
