// FindShmMount and BuildPodPatch: today's /dev/shm, and the operations to the planned one.
#include "shmguard/shm_patch.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "shmguard/json_patch.h"
#include "shmguard/quantity.h"
#include "shmguard/json_access.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr auto Find = FindMember;

bool IsShmPath(const json& mount_path) {
  if (!mount_path.is_string()) return false;
  std::string_view p = mount_path.get_ref<const std::string&>();
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  return p == kShmPath;
}

// The list at obj[key] (nullptr when absent), or an error when it is not a list.
Result<const json*> OptionalList(const json& obj, std::string_view key, const std::string& ptr) {
  const json* v = Find(obj, key);
  if (v && !v->is_array()) {
    return MakeError(Code::kInvalidInput, "must be a list", ptr + "/" + std::string(key));
  }
  return v;
}

// True when the container already mounts something at /dev/shm.
bool MountsShm(const json& container) {
  const json* mounts = Find(container, "volumeMounts");
  if (!mounts || !mounts->is_array()) return false;
  return std::any_of(mounts->begin(), mounts->end(), [](const json& m) {
    const json* p = Find(m, "mountPath");
    return p && IsShmPath(*p);
  });
}

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Container runtimes accept "ipc_lock" and "CAP_IPC_LOCK" alike; "ALL" grants it too.
bool GrantsIpcLock(const json& cap) {
  if (!cap.is_string()) return false;
  std::string c = Upper(cap.get<std::string>());
  return c == "IPC_LOCK" || c == "CAP_IPC_LOCK" || c == "ALL";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool Selected(ContainerSelection sel, const ContainerFacts& c) {
  return sel == ContainerSelection::kAll ||
         (sel == ContainerSelection::kGpuContainers && c.gpus > 0);
}

}  // namespace

Result<ShmMount> FindShmMount(const PodTemplate& t) {
  const json& spec = *t.spec;
  auto volumes = OptionalList(spec, "volumes", t.spec_pointer);
  if (!volumes) return volumes.error();
  std::set<std::string> names;
  for (const char* list_name : {"containers", "initContainers"}) {
    std::string list_ptr = t.spec_pointer + "/" + list_name;
    auto list = OptionalList(spec, list_name, t.spec_pointer);
    if (!list) return list.error();
    if (!*list) continue;
    for (size_t i = 0; i < (*list)->size(); ++i) {
      std::string c_ptr = list_ptr + "/" + std::to_string(i);
      auto mounts = OptionalList((**list)[i], "volumeMounts", c_ptr);
      if (!mounts) return mounts.error();
      if (!*mounts) continue;
      for (const auto& m : **mounts) {
        const json* path = Find(m, "mountPath");
        const json* name = Find(m, "name");
        if (path && IsShmPath(*path) && name && name->is_string()) names.insert(name->get<std::string>());
      }
    }
  }
  if (names.size() > 1) {
    std::vector<std::string> list(names.begin(), names.end());
    return MakeError(Code::kInvalidInput,
                     "containers mount different volumes at /dev/shm (" + JoinNames(list) +
                         "); all processes of a pod must share one /dev/shm",
                     t.spec_pointer);
  }

  ShmMount m;
  std::string wanted = names.empty() ? kShmVolumeName : *names.begin();
  const json* vol = nullptr;
  if (*volumes) {
    for (size_t i = 0; i < (*volumes)->size(); ++i) {
      const json* n = Find((**volumes)[i], "name");
      if (n && n->is_string() && *n == wanted) {
        vol = &(**volumes)[i];
        m.volume_index = static_cast<int>(i);
        break;
      }
    }
  }
  m.volume_name = wanted;
  if (!vol) {
    if (names.empty()) return ShmMount{};
    m.kind = ShmMountKind::kOther;
    m.description = "volume \"" + wanted + "\", which is not declared in spec.volumes";
    return m;
  }
  std::string vol_ptr = t.spec_pointer + "/volumes/" + std::to_string(m.volume_index);
  const json* empty_dir = Find(*vol, "emptyDir");
  const json* medium = empty_dir ? Find(*empty_dir, "medium") : nullptr;
  if (empty_dir && medium && medium->is_string() && *medium == "Memory") {
    m.kind = ShmMountKind::kMemoryEmptyDir;
    if (const json* limit = Find(*empty_dir, "sizeLimit")) {
      auto bytes = ReadQuantityField(*limit, vol_ptr + "/emptyDir/sizeLimit");
      if (!bytes) return bytes.error();
      if (*bytes > 0) m.size_limit = *bytes;
    }
    m.description = "emptyDir Memory " + (m.size_limit ? FormatBytes(*m.size_limit)
                                                         : std::string("without sizeLimit"));
    return m;
  }
  if (names.empty()) return ShmMount{};  // an unmounted "dshm" of another type: name taken
  m.kind = ShmMountKind::kOther;
  if (empty_dir) {
    m.description = "emptyDir \"" + wanted + "\" on the node's disk (no medium: Memory)";
  } else if (const json* host = Find(*vol, "hostPath")) {
    const json* p = Find(*host, "path");
    m.description = "hostPath " + (p && p->is_string() ? p->get<std::string>() : std::string("?")) +
                    " (the node's shared memory, not bounded by the pod)";
  } else {
    std::string type = "a non-emptyDir";
    for (auto it = vol->begin(); it != vol->end(); ++it) {
      if (it.key() != "name") type = it.key();
    }
    m.description = type + " volume \"" + wanted + "\"";
  }
  return m;
}

Result<PodPatch> BuildPodPatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                               const PatchOptions& o) {
  PodPatch p;
  const json& spec = *t.spec;
  const std::string& sp = t.spec_pointer;
  const std::string required = FormatBytes(o.required_bytes);

  // 1. The volume.
  std::string volume_name = mount.volume_name;
  if (mount.kind == ShmMountKind::kNone) {
    std::set<std::string> taken;
    if (const json* vols = Find(spec, "volumes")) {
      for (const auto& v : *vols) {
        const json* n = Find(v, "name");
        if (n && n->is_string()) taken.insert(n->get<std::string>());
      }
    }
    volume_name = kShmVolumeName;
    for (int i = 1; taken.count(volume_name); ++i) volume_name = kShmVolumeName + ("-" + std::to_string(i));
    json vol = {{"name", volume_name}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", required}}}};
    p.ops.push_back(Find(spec, "volumes") ? AddOp(sp + "/volumes/-", vol)
                                          : AddOp(sp + "/volumes", json::array({vol})));
    p.changes.push_back("add volume " + volume_name + ": emptyDir {medium: Memory, sizeLimit: " +
                        required + "}");
  } else if (!mount.size_limit || *mount.size_limit < o.required_bytes) {
    std::string path = sp + "/volumes/" + std::to_string(mount.volume_index) + "/emptyDir/sizeLimit";
    const json& empty_dir = spec["volumes"][mount.volume_index]["emptyDir"];
    p.ops.push_back(Find(empty_dir, "sizeLimit") ? ReplaceOp(path, required) : AddOp(path, required));
    p.changes.push_back("raise sizeLimit of volume " + volume_name + " from " +
                        (mount.size_limit ? FormatBytes(*mount.size_limit) : "unset") + " to " +
                        required);
  }

  // 2. The /dev/shm mounts; 3. IPC_LOCK.
  std::vector<std::string> mounted, locked;
  for (const auto& c : facts.containers) {
    const json& cj = spec[c.init ? "initContainers" : "containers"][c.index];
    bool wants_mount = !c.init || Selected(o.init_container_mounts, c);
    if (wants_mount && !MountsShm(cj)) {
      auto mounts = OptionalList(cj, "volumeMounts", c.pointer);
      if (!mounts) return mounts.error();
      json m = {{"name", volume_name}, {"mountPath", kShmPath}};
      p.ops.push_back(*mounts ? AddOp(c.pointer + "/volumeMounts/-", m)
                              : AddOp(c.pointer + "/volumeMounts", json::array({m})));
      mounted.push_back(c.name);
    }
    if (c.init || !Selected(o.ipc_lock, c)) continue;
    const json* sc = Find(cj, "securityContext");
    json add = json::array({"IPC_LOCK"});
    if (!sc) {
      p.ops.push_back(AddOp(c.pointer + "/securityContext", {{"capabilities", {{"add", add}}}}));
    } else {
      if (!sc->is_object()) {
        return MakeError(Code::kInvalidInput, "must be an object", c.pointer + "/securityContext");
      }
      const json* priv = Find(*sc, "privileged");
      if (priv && priv->is_boolean() && priv->get<bool>()) continue;  // has every capability
      std::string caps_ptr = c.pointer + "/securityContext/capabilities";
      const json* caps = Find(*sc, "capabilities");
      if (!caps) {
        p.ops.push_back(AddOp(caps_ptr, {{"add", add}}));
      } else {
        if (!caps->is_object()) return MakeError(Code::kInvalidInput, "must be an object", caps_ptr);
        auto list = OptionalList(*caps, "add", caps_ptr);
        if (!list) return list.error();
        if (!*list) {
          p.ops.push_back(AddOp(caps_ptr + "/add", add));
        } else if (std::none_of((*list)->begin(), (*list)->end(), GrantsIpcLock)) {
          p.ops.push_back(AddOp(caps_ptr + "/add/-", "IPC_LOCK"));
        } else {
          continue;
        }
      }
    }
    locked.push_back(c.name);
  }
  if (!mounted.empty()) p.changes.push_back("mount " + volume_name + " at /dev/shm in " + JoinNames(mounted));
  if (!locked.empty()) p.changes.push_back("add capability IPC_LOCK to " + JoinNames(locked));

  // 4. hostIPC.
  const json* host_ipc = Find(spec, "hostIPC");
  if (o.host_ipc && !(host_ipc && host_ipc->is_boolean() && host_ipc->get<bool>())) {
    p.ops.push_back(host_ipc ? ReplaceOp(sp + "/hostIPC", true) : AddOp(sp + "/hostIPC", true));
    p.changes.push_back("set hostIPC: true");
  }

  // 5. Annotations on the pod template.
  const json* existing = t.metadata ? Find(*t.metadata, "annotations") : nullptr;
  if (existing && !existing->is_object()) {
    return MakeError(Code::kInvalidInput, "must be a mapping", t.metadata_pointer + "/annotations");
  }
  json missing = json::object();
  for (const auto& [key, value] : o.annotations) {
    const json* cur = existing ? Find(*existing, key) : nullptr;
    if (!cur || !cur->is_string() || *cur != value) missing[key] = value;
  }
  if (!missing.empty()) {
    if (!t.metadata) {
      p.ops.push_back(AddOp(t.metadata_pointer, {{"annotations", missing}}));
    } else if (!existing) {
      p.ops.push_back(AddOp(t.metadata_pointer + "/annotations", missing));
    } else {
      for (auto it = missing.begin(); it != missing.end(); ++it) {
        std::string path = t.metadata_pointer + "/annotations/" + EscapePointerToken(it.key());
        p.ops.push_back(existing->contains(it.key()) ? ReplaceOp(path, it.value())
                                                     : AddOp(path, it.value()));
      }
    }
    std::vector<std::string> keys;
    for (auto it = missing.begin(); it != missing.end(); ++it) keys.push_back(it.key());
    p.changes.push_back("set annotation" + std::string(keys.size() > 1 ? "s " : " ") + JoinNames(keys));
  }
  return p;
}

}  // namespace shmguard
