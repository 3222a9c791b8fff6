// FindShmVolumes, WorkloadOf and ShmWatch: a running pod's /dev/shm, as the node agent sees it.
#include "shmguard/shm_watch.h"

#include <algorithm>

namespace shmguard {
namespace {

const nlohmann::json* Find(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string StringAt(const nlohmann::json& j, const char* key) {
  const auto* v = Find(j, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// True when a container of `spec` mounts volume `name` at /dev/shm.
bool MountedAtDevShm(const nlohmann::json& spec, const std::string& name) {
  for (const char* list : {"containers", "initContainers"}) {
    const auto* containers = Find(spec, list);
    if (!containers || !containers->is_array()) continue;
    for (const auto& c : *containers) {
      const auto* mounts = Find(c, "volumeMounts");
      if (!mounts || !mounts->is_array()) continue;
      for (const auto& m : *mounts) {
        if (StringAt(m, "name") == name && StringAt(m, "mountPath") == "/dev/shm") return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<ShmVolume> FindShmVolumes(const nlohmann::json& pod) {
  std::vector<ShmVolume> out;
  const auto* spec = Find(pod, "spec");
  const auto* volumes = spec ? Find(*spec, "volumes") : nullptr;
  if (!volumes || !volumes->is_array()) return out;
  for (const auto& v : *volumes) {
    const auto* empty_dir = Find(v, "emptyDir");
    if (!empty_dir || StringAt(*empty_dir, "medium") != "Memory") continue;
    std::string name = StringAt(v, "name");
    if (!name.empty() && MountedAtDevShm(*spec, name)) out.push_back({name});
  }
  return out;
}

std::string WorkloadOf(const nlohmann::json& pod) {
  const auto* meta = Find(pod, "metadata");
  if (!meta) return "Pod/";
  if (const auto* annotations = Find(*meta, "annotations")) {
    std::string profile = StringAt(*annotations, "shmguard.io/profile");
    if (!profile.empty()) return "profile/" + profile;
  }
  if (const auto* owners = Find(*meta, "ownerReferences"); owners && owners->is_array()) {
    for (const auto& o : *owners) {
      const auto* controller = Find(o, "controller");
      if (!controller || !controller->is_boolean() || !controller->get<bool>()) continue;
      std::string kind = StringAt(o, "kind"), name = StringAt(o, "name");
      if (kind == "ReplicaSet") {
        const auto* labels = Find(*meta, "labels");
        std::string hash = labels ? StringAt(*labels, "pod-template-hash") : std::string();
        if (!hash.empty() && name.size() > hash.size() + 1 &&
            name.compare(name.size() - hash.size() - 1, std::string::npos, "-" + hash) == 0) {
          return "Deployment/" + name.substr(0, name.size() - hash.size() - 1);
        }
      }
      return kind + "/" + name;
    }
  }
  return "Pod/" + StringAt(*meta, "name");
}

bool ShmWatch::Observe(uint64_t used, uint64_t size) {
  if (size == 0) return false;
  used_ = used;
  size_ = size;
  peak_ = std::max(peak_, used);
  const double fraction = static_cast<double>(used) / static_cast<double>(size);
  if (!above_ && fraction >= threshold_) {
    above_ = true;
    return true;
  }
  if (above_ && fraction < threshold_ - kRearm) above_ = false;
  return false;
}

}  // namespace shmguard
