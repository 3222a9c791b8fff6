// Policy defaults and namespace matching (fnmatch(3) globs, first match wins).
#include "core/policy/policy.h"

#include <fnmatch.h>

namespace shmguard {

std::vector<NamespaceRule> Policy::DefaultNamespaceRules() {
  return {
      {{"kube-*"}, NamespaceMode::kOff, false, PodSecurityLevel::kPrivileged},
      {{"ml-*", "train-*"}, NamespaceMode::kEnforce, true, PodSecurityLevel::kPrivileged},
      {{"*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kPrivileged},
  };
}

NamespaceRule MatchNamespace(const Policy& policy, std::string_view ns) {
  std::string name(ns);
  for (const auto& rule : policy.namespaces) {
    for (const auto& glob : rule.match) {
      if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) return rule;
    }
  }
  return NamespaceRule{{"*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kPrivileged};
}

HostIpcMode HostIpcIn(const Policy& policy, const NamespaceRule& rule) {
  return rule.host_ipc.value_or(policy.host_ipc);
}

IpcLockMode IpcLockIn(const Policy& policy, const NamespaceRule& rule) {
  return rule.ipc_lock.value_or(policy.ipc_lock);
}

bool MatchesResource(const std::vector<std::string>& globs, std::string_view resource) {
  std::string name(resource);
  for (const auto& glob : globs) {
    if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

std::string FindResource(std::initializer_list<JsonNode> lists, const std::vector<std::string>& globs) {
  if (globs.empty()) return {};
  for (JsonNode list : lists) {
    for (const auto& [name, value] : list.Members()) {
      if (name.find('/') != std::string_view::npos && MatchesResource(globs, name)) return std::string(name);
    }
  }
  return {};
}

const char* HostIpcModeName(HostIpcMode m) {
  switch (m) {
    case HostIpcMode::kAuto: return "auto";
    case HostIpcMode::kAlways: return "always";
    case HostIpcMode::kNever: return "never";
  }
  return "auto";
}

const char* IpcLockModeName(IpcLockMode m) {
  switch (m) {
    case IpcLockMode::kAuto: return "auto";
    case IpcLockMode::kAlways: return "always";
    case IpcLockMode::kAll: return "all";
    case IpcLockMode::kNever: return "never";
  }
  return "auto";
}

const char* ContainerSelectionName(ContainerSelection s) {
  switch (s) {
    case ContainerSelection::kGpuContainers: return "gpu-containers";
    case ContainerSelection::kAll: return "all";
    case ContainerSelection::kNever: return "never";
  }
  return "gpu-containers";
}

const char* NamespaceModeName(NamespaceMode m) {
  switch (m) {
    case NamespaceMode::kOff: return "off";
    case NamespaceMode::kWarn: return "warn";
    case NamespaceMode::kEnforce: return "enforce";
  }
  return "warn";
}

const char* PodSecurityLevelName(PodSecurityLevel l) {
  switch (l) {
    case PodSecurityLevel::kPrivileged: return "privileged";
    case PodSecurityLevel::kBaseline: return "baseline";
    case PodSecurityLevel::kRestricted: return "restricted";
  }
  return "privileged";
}

std::optional<PodSecurityLevel> ParsePodSecurityLevel(std::string_view name) {
  return FindByName(kPodSecurityLevels, PodSecurityLevelName, name);
}

const char* UnannotatedModeName(UnannotatedMode m) {
  switch (m) {
    case UnannotatedMode::kEstimate: return "estimate";
    case UnannotatedMode::kFloor: return "floor";
    case UnannotatedMode::kLeave: return "leave";
  }
  return "estimate";
}

}  // namespace shmguard
