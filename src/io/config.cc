// ParsePolicy: a strict reader over yaml-cpp nodes, keeping line numbers for every error.
#include "io/config.h"

#include <functional>
#include <map>

#include <yaml-cpp/yaml.h>

#include "io/manifests.h"
#include "shmguard/quantity.h"
#include "shmguard/shm_plan.h"

namespace shmguard::io {
namespace {

class PolicyReader {
 public:
  explicit PolicyReader(std::string name) : name_(std::move(name)) {}

  Result<Policy> Read(const YAML::Node& root) {
    Policy p;
    if (root.IsNull()) return p;
    if (!Expect(root, YAML::NodeType::Map, "policy", "a mapping")) return *error_;
    using Handler = std::function<bool(const YAML::Node&)>;
    std::map<std::string, Handler> keys = {
        {"gpuResources", [&](const YAML::Node& n) { return StringList(n, "gpuResources", p.gpu_resources, false); }},
        {"hostIPC", [&](const YAML::Node& n) {
           return Enum(n, "hostIPC", p.host_ipc,
                       {{"auto", HostIpcMode::kAuto}, {"always", HostIpcMode::kAlways}, {"never", HostIpcMode::kNever}});
         }},
        {"ipcLock", [&](const YAML::Node& n) { return Selection(n, "ipcLock", p.ipc_lock); }},
        {"initContainerMounts", [&](const YAML::Node& n) { return Selection(n, "initContainerMounts", p.init_container_mounts); }},
        {"maxFractionOfMemoryLimit", [&](const YAML::Node& n) {
           return Decimal(n, "maxFractionOfMemoryLimit", 1, 1'000'000, p.max_fraction_ppm);
         }},
        {"sizing", [&](const YAML::Node& n) { return Sizing(n, p.sizing); }},
        {"namespaces", [&](const YAML::Node& n) { return Namespaces(n, p.namespaces); }},
    };
    for (const auto& kv : root) {
      std::string key = kv.first.Scalar();
      auto it = keys.find(key);
      if (it == keys.end()) {
        return Fail(kv.first, key, "unknown key; known keys: gpuResources, hostIPC, ipcLock, "
                                   "initContainerMounts, maxFractionOfMemoryLimit, sizing, namespaces");
      }
      if (!it->second(kv.second)) return *error_;
    }
    return p;
  }

 private:
  bool FailB(const YAML::Node& n, const std::string& key, const std::string& msg) {
    Fail(n, key, msg);
    return false;
  }
  Error Fail(const YAML::Node& n, const std::string& key, const std::string& msg) {
    error_ = MakeError(Code::kInvalidInput, key + ": " + msg,
                       name_ + ":" + std::to_string(n.Mark().line + 1));
    return *error_;
  }

  bool Expect(const YAML::Node& n, YAML::NodeType::value type, const std::string& key,
              const char* what) {
    if (n.Type() == type) return true;
    return FailB(n, key, std::string("must be ") + what);
  }

  bool Scalar(const YAML::Node& n, const std::string& key, std::string& out) {
    if (!Expect(n, YAML::NodeType::Scalar, key, "a single value")) return false;
    out = n.Scalar();
    return true;
  }

  template <typename E>
  bool Enum(const YAML::Node& n, const std::string& key, E& out,
            const std::vector<std::pair<std::string, E>>& values) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    std::string allowed;
    for (const auto& [text, v] : values) {
      if (s == text) {
        out = v;
        return true;
      }
      allowed += (allowed.empty() ? "" : ", ") + text;
    }
    return FailB(n, key, "must be one of " + allowed + ", got \"" + s + "\"");
  }

  bool Selection(const YAML::Node& n, const std::string& key, ContainerSelection& out) {
    return Enum(n, key, out,
                {{"gpu-containers", ContainerSelection::kGpuContainers},
                 {"all", ContainerSelection::kAll},
                 {"never", ContainerSelection::kNever}});
  }

  bool Bool(const YAML::Node& n, const std::string& key, bool& out) {
    return Enum(n, key, out, {{"true", true}, {"false", false}});
  }

  bool StringList(const YAML::Node& n, const std::string& key, std::vector<std::string>& out,
                  bool globs) {
    if (!Expect(n, YAML::NodeType::Sequence, key, "a list")) return false;
    out.clear();
    for (const auto& item : n) {
      std::string s;
      if (!Scalar(item, key, s)) return false;
      if (s.empty()) return FailB(item, key, "entries must not be empty");
      if (globs && !ValidGlob(s)) {
        return FailB(item, key, "\"" + s + "\" is not a namespace glob (letters, digits, '-', "
                                "'*', '?', and closed [...] classes)");
      }
      out.push_back(s);
    }
    return true;
  }

  static bool ValidGlob(const std::string& g) {
    bool in_class = false;
    for (size_t i = 0; i < g.size(); ++i) {
      char c = g[i];
      if (in_class) {
        if (c == ']') in_class = false;
        continue;
      }
      if (c == '[') {
        in_class = true;
        if (i + 1 < g.size() && (g[i + 1] == '!' || g[i + 1] == '^')) ++i;
        continue;
      }
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '*' ||
                c == '?' || c == '.';
      if (!ok) return false;
    }
    return !in_class;
  }

  // A decimal such as 0.5 or 1.2, exactly, in millionths, within [min, max].
  bool Decimal(const YAML::Node& n, const std::string& key, int64_t min, int64_t max,
               int64_t& out) {
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
      return FailB(n, key, "must be a decimal number from " + FormatPpm(min) + " to " +
                               FormatPpm(max) + " (at most 6 decimals), got \"" + s + "\"");
    }
    out = v;
    return true;
  }

  bool Count(const YAML::Node& n, const std::string& key, int64_t min, int64_t max, int64_t& out) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    int64_t v = 0;
    bool ok = !s.empty() && s.size() <= 18;
    for (char c : s) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (ok) v = std::stoll(s);
    if (!ok || v < min || v > max) {
      return FailB(n, key, "must be a whole number from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", got \"" + s + "\"");
    }
    out = v;
    return true;
  }

  bool Bytes(const YAML::Node& n, const std::string& key, int64_t& out) {
    std::string s;
    if (!Scalar(n, key, s)) return false;
    auto v = ParseBytes(s, key);
    if (!v) return FailB(n, key, v.error().message.substr(key.size() + 2));
    out = *v;
    return true;
  }

  bool Sizing(const YAML::Node& n, SizingConstants& k) {
    if (!Expect(n, YAML::NodeType::Map, "sizing", "a mapping")) return false;
    for (const auto& kv : n) {
      std::string key = kv.first.Scalar();
      std::string full = "sizing." + key;
      const YAML::Node& v = kv.second;
      bool ok = true;
      if (key == "prefetchFactor") ok = Count(v, full, 1, 1024, k.prefetch_factor);
      else if (key == "inFlightExtra") ok = Count(v, full, 0, 1024, k.in_flight_extra);
      else if (key == "safety") ok = Decimal(v, full, 1'000'000, 100'000'000, k.safety_ppm);
      else if (key == "base") ok = Bytes(v, full, k.base_bytes);
      else if (key == "multiGpuFloor") ok = Bytes(v, full, k.multi_gpu_floor_bytes);
      else if (key == "ncclConnectionBytes") ok = Bytes(v, full, k.nccl_connection_bytes);
      else if (key == "ncclProxyPoolBytes") ok = Bytes(v, full, k.nccl_proxy_pool_bytes);
      else {
        return FailB(kv.first, full, "unknown key; known keys: prefetchFactor, inFlightExtra, "
                                     "safety, base, multiGpuFloor, ncclConnectionBytes, ncclProxyPoolBytes");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool Namespaces(const YAML::Node& n, std::vector<NamespaceRule>& rules) {
    if (!Expect(n, YAML::NodeType::Sequence, "namespaces", "a list")) return false;
    rules.clear();
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node& r = n[i];
      std::string base = "namespaces[" + std::to_string(i) + "]";
      if (!Expect(r, YAML::NodeType::Map, base, "a mapping")) return false;
      NamespaceRule rule;
      bool has_match = false;
      for (const auto& kv : r) {
        std::string key = kv.first.Scalar();
        std::string full = base + "." + key;
        bool ok = true;
        if (key == "match") {
          has_match = true;
          if (kv.second.IsScalar()) {
            std::vector<std::string> one;
            YAML::Node seq(YAML::NodeType::Sequence);
            seq.push_back(kv.second);
            ok = StringList(seq, full, rule.match, true);
          } else {
            ok = StringList(kv.second, full, rule.match, true);
          }
        } else if (key == "mode") {
          ok = Enum(kv.second, full, rule.mode,
                    {{"off", NamespaceMode::kOff}, {"warn", NamespaceMode::kWarn},
                     {"enforce", NamespaceMode::kEnforce}});
        } else if (key == "requireAnnotations") {
          ok = Bool(kv.second, full, rule.require_annotations);
        } else if (key == "podSecurity") {
          ok = Enum(kv.second, full, rule.pod_security,
                    {{"privileged", PodSecurityLevel::kPrivileged},
                     {"baseline", PodSecurityLevel::kBaseline},
                     {"restricted", PodSecurityLevel::kRestricted}});
        } else {
          return FailB(kv.first, full, "unknown key; known keys: match, mode, requireAnnotations, podSecurity");
        }
        if (!ok) return false;
      }
      if (!has_match || rule.match.empty()) return FailB(r, base + ".match", "is required: a list of namespace globs");
      rules.push_back(std::move(rule));
    }
    return true;
  }

  std::string name_;
  std::optional<Error> error_;
};

}  // namespace

Result<Policy> ParsePolicy(std::string_view text, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    PolicyReader reader(name);
    return reader.Read(root);
  } catch (const YAML::Exception& e) {
    std::string where = name + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1));
    return MakeError(Code::kInvalidInput, "YAML: " + e.msg, where);
  }
}

Result<Policy> LoadPolicy(const std::string& path) {
  auto text = ReadFileText(path);
  if (!text) return text.error();
  return ParsePolicy(*text, path);
}

}  // namespace shmguard::io
