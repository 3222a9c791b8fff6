// ParsePolicy: a strict reader over the policy's YAML as written (ParseYamlAsText), naming the
// line of every error.
#include "io/config.h"

#include <functional>
#include <map>

#include "io/manifests.h"
#include "io/yaml_json.h"
#include "shmguard/plan/shm_plan.h"
#include "shmguard/values/glob.h"
#include "shmguard/values/human_units.h"
#include "shmguard/values/json_patch.h"
#include "shmguard/values/quantity.h"

namespace shmguard::io {
namespace {

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

class PolicyReader {
 public:
  PolicyReader(std::string name, const YamlText& doc) : name_(std::move(name)), doc_(doc) {}

  Result<Policy> Read() {
    Policy p;
    Node root{doc_.Root(), ""};
    if (root.v.IsNull()) return p;
    if (!Expect(root, Type::kObject, "policy", "a mapping")) return *error_;
    using Handler = std::function<bool(const Node&)>;
    std::map<std::string, Handler> keys = {
        {"gpuResources",
         [&](const Node& n) { return StringList(n, "gpuResources", p.gpu_resources, Entries::kResourceNames); }},
        {"mpsResources",
         [&](const Node& n) { return StringList(n, "mpsResources", p.mps_resources, Entries::kResourceNames); }},
        {"rdmaResources",
         [&](const Node& n) { return StringList(n, "rdmaResources", p.rdma_resources, Entries::kResourceGlobs); }},
        {"gpuDeviceClasses",
         [&](const Node& n) { return StringList(n, "gpuDeviceClasses", p.gpu_device_classes, Entries::kWords); }},
        {"hostIPC", [&](const Node& n) { return Enum(n, "hostIPC", p.host_ipc, kHostIpcModes, HostIpcModeName); }},
        {"ipcLock", [&](const Node& n) { return IpcLock(n, "ipcLock", p.ipc_lock); }},
        {"initContainerMounts",
         [&](const Node& n) { return Selection(n, "initContainerMounts", p.init_container_mounts); }},
        {"maxFractionOfMemoryLimit",
         [&](const Node& n) { return Decimal(n, "maxFractionOfMemoryLimit", 1, 1'000'000, p.max_fraction_ppm); }},
        {"sizing", [&](const Node& n) { return Sizing(n, p.sizing); }},
        {"unannotated", [&](const Node& n) { return Unannotated(n, p.unannotated); }},
        {"observed", [&](const Node& n) { return Observed(n, p.observed); }},
        {"namespaces", [&](const Node& n) { return Namespaces(n, p.namespaces); }},
        {"tls", [&](const Node& n) { return Tls(n, p.tls); }},
    };
    for (const auto& [key, value] : root.Members()) {
      auto it = keys.find(key);
      if (it == keys.end()) {
        return Fail(
            value, key,
            "unknown key; known keys: gpuResources, gpuDeviceClasses, mpsResources, rdmaResources, hostIPC, ipcLock, "
            "initContainerMounts, maxFractionOfMemoryLimit, sizing, unannotated, observed, namespaces, tls");
      }
      if (!it->second(value)) return *error_;
    }
    return p;
  }

 private:
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

  bool Sizing(const Node& n, SizingConstants& k) {
    if (!Expect(n, Type::kObject, "sizing", "a mapping")) return false;
    for (const auto& [key, v] : n.Members()) {
      std::string full = "sizing." + key;
      bool ok = true;
      if (key == "prefetchFactor")
        ok = Count(v, full, 1, kMaxPrefetchFactor, k.prefetch_factor);
      else if (key == "inFlightExtra")
        ok = Count(v, full, 0, 1024, k.in_flight_extra);
      else if (key == "safety")
        ok = Decimal(v, full, 1'000'000, 100'000'000, k.safety_ppm);
      else if (key == "base")
        ok = Bytes(v, full, k.base_bytes);
      else if (key == "multiGpuFloor")
        ok = Bytes(v, full, k.multi_gpu_floor_bytes);
      else if (key == "ncclConnectionBytes")
        ok = Bytes(v, full, k.nccl_connection_bytes);
      else if (key == "ncclProxyPoolBytes")
        ok = Bytes(v, full, k.nccl_proxy_pool_bytes);
      else {
        return FailB(v, full,
                     "unknown key; known keys: prefetchFactor, inFlightExtra, "
                     "safety, base, multiGpuFloor, ncclConnectionBytes, ncclProxyPoolBytes");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool Unannotated(const Node& n, UnannotatedRule& u) {
    if (!Expect(n, Type::kObject, "unannotated", "a mapping")) return false;
    for (const auto& [key, v] : n.Members()) {
      std::string full = "unannotated." + key;
      bool ok = true;
      if (key == "mode") {
        ok = Enum(v, full, u.mode, kUnannotatedModes, UnannotatedModeName);
      } else if (key == "fractionOfMemoryLimit") {
        ok = Decimal(v, full, 0, 1'000'000, u.fraction_ppm);
      } else if (key == "minimum") {
        ok = Bytes(v, full, u.minimum_bytes);
      } else {
        return FailB(v, full, "unknown key; known keys: mode, fractionOfMemoryLimit, minimum");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool Observed(const Node& n, ObservedRule& o) {
    if (!Expect(n, Type::kObject, "observed", "a mapping")) return false;
    for (const auto& [key, v] : n.Members()) {
      std::string full = "observed." + key;
      if (key == "margin") {
        if (!Decimal(v, full, 1'000'000, 10'000'000, o.margin_ppm)) return false;
      } else if (key == "retentionDays") {
        if (!Count(v, full, 1, 3650, o.retention_days)) return false;
      } else {
        return FailB(v, full, "unknown key; known keys: margin, retentionDays");
      }
    }
    return true;
  }

  bool Tls(const Node& n, TlsPolicy& t) {
    if (!Expect(n, Type::kObject, "tls", "a mapping")) return false;
    for (const auto& [key, v] : n.Members()) {
      std::string full = "tls." + key;
      if (key == "minVersion") {
        std::string s;
        if (!Scalar(v, full, s)) return false;
        auto version = ParseTlsVersion(s);
        if (!version) return FailB(v, full, version.error().message);
        t.min_version = *version;
      } else if (key == "cipherSuites") {
        if (!StringList(v, full, t.cipher_suites, Entries::kWords)) return false;
        // Whether TLS 1.2 is allowed is known once the flags are merged in (the server checks).
        if (auto suites = ParseCipherSuites(t.cipher_suites, false); !suites) {
          return FailB(v, full, suites.error().message);
        }
      } else {
        return FailB(v, full, "unknown key; known keys: minVersion, cipherSuites");
      }
    }
    return true;
  }

  bool Namespaces(const Node& n, std::vector<NamespaceRule>& rules) {
    if (!Expect(n, Type::kArray, "namespaces", "a list")) return false;
    rules.clear();
    const std::vector<Node> items = n.Items();
    for (size_t i = 0; i < items.size(); ++i) {
      const Node& r = items[i];
      std::string base = "namespaces[" + std::to_string(i) + "]";
      if (!Expect(r, Type::kObject, base, "a mapping")) return false;
      NamespaceRule rule;
      bool has_match = false;
      for (const auto& [key, value] : r.Members()) {
        std::string full = base + "." + key;
        bool ok = true;
        if (key == "match") {
          has_match = true;
          ok = StringList(value, full, rule.match, Entries::kNamespaceGlobs);
        } else if (key == "mode") {
          ok = Enum(value, full, rule.mode, kNamespaceModes, NamespaceModeName);
        } else if (key == "requireAnnotations") {
          ok = Bool(value, full, rule.require_annotations);
        } else if (key == "podSecurity") {
          ok = Enum(value, full, rule.pod_security, kPodSecurityLevels, PodSecurityLevelName);
        } else if (key == "growInPlace") {
          ok = Bool(value, full, rule.grow_in_place);
        } else if (key == "reclaimLeakedSegments") {
          ok = Bool(value, full, rule.reclaim_leaked_segments);
        } else if (key == "hostIPC") {
          HostIpcMode mode{};
          ok = Enum(value, full, mode, kHostIpcModes, HostIpcModeName);
          rule.host_ipc = mode;
        } else if (key == "ipcLock") {
          IpcLockMode mode{};
          ok = IpcLock(value, full, mode);
          rule.ipc_lock = mode;
        } else if (key == "ignore") {
          std::vector<std::string> ids;
          ok = StringList(value, full, ids, Entries::kWords);
          for (size_t k = 0; ok && k < ids.size(); ++k) {
            auto check = FindCheck(ids[k]);
            if (!check) return FailB(value.Items()[k], full, "\"" + ids[k] + "\" is not a check ID (docs/checks.md)");
            rule.ignore.push_back(*check);
          }
        } else {
          return FailB(value, full,
                       "unknown key; known keys: match, mode, requireAnnotations, podSecurity, ignore, growInPlace, "
                       "reclaimLeakedSegments, hostIPC, ipcLock");
        }
        if (!ok) return false;
      }
      if (!has_match || rule.match.empty()) return FailB(r, base + ".match", "is required: a list of namespace globs");
      rules.push_back(std::move(rule));
    }
    return true;
  }

  std::string name_;
  const YamlText& doc_;
  std::optional<Error> error_;
};

}  // namespace

Result<Policy> ParsePolicy(std::string_view text, const std::string& name) {
  auto doc = ParseYamlAsText(text);
  if (!doc) return MakeError(Code::kInvalidInput, doc.error().message, InFile(name, doc.error().where));
  return PolicyReader(name, *doc).Read();
}

Result<Policy> LoadPolicy(const std::string& path, Readable readable) {
  auto text = ReadFileText(path, kMaxPolicyBytes, readable);
  if (!text) return text.error();
  return ParsePolicy(*text, path);
}

}  // namespace shmguard::io
