// ParsePolicy: a strict reader over the policy's YAML as written (ParseYamlAsText), naming the
// line of every error.
#include "io/config/config.h"

#include <functional>
#include <map>

#include "core/plan/shm_plan.h"
#include "core/values/glob.h"
#include "core/values/human_units.h"
#include "core/values/json_patch.h"
#include "core/values/quantity.h"
#include "io/config/policy_fields.h"
#include "io/files/file_text.h"
#include "io/formats/yaml_json.h"

namespace shmguard::io {
namespace {

class PolicyReader : public FieldReader {
 public:
  using FieldReader::FieldReader;

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
