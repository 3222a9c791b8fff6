// ReadPolicyFloor and UndoPolicyFloor.
#include "core/patch/policy_floor.h"

#include "core/workloads/pod_templates.h"

namespace shmguard {
namespace {

using nlohmann::json;

std::vector<int> Indices(const json& plan, const char* key) {
  std::vector<int> out;
  auto it = plan.find(key);
  if (it == plan.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < (1 << 20)) out.push_back(v.get<int>());
  }
  return out;
}

// The member `key` of `parent` when it is of `type`, else nullptr.
json* Member(json& parent, const char* key, json::value_t type) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  return it != parent.end() && it->type() == type ? &*it : nullptr;
}

// Removes the last element of `list` for which `match` holds; true when one was.
template <typename Match>
bool RemoveLast(json& list, Match match) {
  for (size_t i = list.size(); i-- > 0;) {
    if (match(list[i])) {
      list.erase(i);
      return true;
    }
  }
  return false;
}

// Removes `parent[key]` when it is an empty object or array.
void DropEmpty(json& parent, const char* key) {
  auto it = parent.find(key);
  if (it != parent.end() && (it->is_object() || it->is_array()) && it->empty()) parent.erase(it);
}

// The container at `index` of the app containers followed by the init containers.
json* ContainerAt(json& spec, int index) {
  json* apps = Member(spec, "containers", json::value_t::array);
  const int n = apps ? static_cast<int>(apps->size()) : 0;
  if (index < n) return &(*apps)[index];
  json* inits = Member(spec, "initContainers", json::value_t::array);
  if (!inits || index - n >= static_cast<int>(inits->size())) return nullptr;
  return &(*inits)[index - n];
}

void RemoveShmMount(json& container, const std::string& volume) {
  json* mounts = Member(container, "volumeMounts", json::value_t::array);
  if (!mounts) return;
  RemoveLast(*mounts, [&](const json& m) {
    return m.is_object() && m.value("name", json()) == volume && m.value("mountPath", json()) == "/dev/shm";
  });
  DropEmpty(container, "volumeMounts");
}

void RemoveIpcLock(json& container) {
  json* sc = Member(container, "securityContext", json::value_t::object);
  json* caps = sc ? Member(*sc, "capabilities", json::value_t::object) : nullptr;
  json* add = caps ? Member(*caps, "add", json::value_t::array) : nullptr;
  if (!add || !RemoveLast(*add, [](const json& c) { return c == "IPC_LOCK"; })) return;
  DropEmpty(*caps, "add");
  DropEmpty(*sc, "capabilities");
  DropEmpty(container, "securityContext");
}

}  // namespace

std::optional<PolicyFloor> ReadPolicyFloor(JsonNode pod) {
  JsonNode plan = pod.Find("metadata").Find("annotations").Find(kPlanAnnotation);
  if (!plan.IsString()) return std::nullopt;
  const json p = json::parse(plan.String(), nullptr, /*allow_exceptions=*/false);
  if (!p.is_object() || p.value("policyMode", json()) != true) return std::nullopt;
  PolicyFloor floor;
  if (auto v = p.find("volume"); v != p.end() && v->is_string()) floor.volume = v->get<std::string>();
  if (auto r = p.find("raisedFrom"); r != p.end() && r->is_string()) floor.raised_from = r->get<std::string>();
  floor.added = p.value("added", json()) == true;
  floor.host_ipc = p.value("hostIPC", json()) == true;
  floor.mounted_in = Indices(p, "mountedIn");
  floor.locked_in = Indices(p, "lockedIn");
  return floor;
}

json UndoPolicyFloor(JsonNode pod, const PolicyFloor& floor) {
  json out = pod.Copy();
  if (json* meta = Member(out, "metadata", json::value_t::object)) {
    if (json* a = Member(*meta, "annotations", json::value_t::object)) a->erase(kPlanAnnotation);
  }
  json* spec = Member(out, "spec", json::value_t::object);
  if (!spec) return out;
  if (!floor.volume.empty()) {
    for (int i : floor.mounted_in) {
      if (json* c = ContainerAt(*spec, i)) RemoveShmMount(*c, floor.volume);
    }
    json* volumes = Member(*spec, "volumes", json::value_t::array);
    for (size_t i = 0; volumes && i < volumes->size(); ++i) {
      json& v = (*volumes)[i];
      json* dir = v.is_object() && v.value("name", json()) == floor.volume
                      ? Member(v, "emptyDir", json::value_t::object)
                      : nullptr;
      if (!dir || dir->value("medium", json()) != "Memory") continue;
      if (floor.added) {
        volumes->erase(i);
        DropEmpty(*spec, "volumes");
      } else if (!floor.raised_from.empty()) {
        (*dir)["sizeLimit"] = floor.raised_from;
      }
      break;
    }
  }
  for (int i : floor.locked_in) {
    json* apps = Member(*spec, "containers", json::value_t::array);
    if (apps && i < static_cast<int>(apps->size())) RemoveIpcLock((*apps)[i]);
  }
  if (floor.host_ipc) spec->erase("hostIPC");
  return out;
}

}  // namespace shmguard
