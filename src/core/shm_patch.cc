// FindShmMount and BuildPodPatch: today's /dev/shm, and the operations to the planned one.
#include "shmguard/shm_patch.h"

#include <cctype>
#include <set>
#include <string_view>

#include "shmguard/compact_json.h"
#include "shmguard/json_patch.h"
#include "shmguard/quantity.h"

namespace shmguard {
namespace {

bool IsShmPath(JsonNode mount_path) {
  if (!mount_path.IsString()) return false;
  std::string_view p = mount_path.String();
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  return p == kShmPath;
}

// The list at obj[key] (absent when absent), or an error naming ptr() + "/" + key when it is
// not a list (the pointer is only built then).
template <typename Pointer>
Result<JsonNode> OptionalList(JsonNode obj, std::string_view key, const Pointer& ptr) {
  JsonNode v = obj.Find(key);
  if (v && !v.IsArray()) {
    return MakeError(Code::kInvalidInput, "must be a list", ptr() + "/" + std::string(key));
  }
  return v;
}

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Container runtimes accept "ipc_lock" and "CAP_IPC_LOCK" alike; "ALL" grants it too.
bool GrantsIpcLock(JsonNode cap) {
  if (!cap.IsString()) return false;
  std::string c = Upper(std::string(cap.String()));
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

bool MountsShm(JsonNode container) {
  for (JsonNode m : container.Find("volumeMounts").Items()) {
    if (IsShmPath(m.Find("mountPath"))) return true;
  }
  return false;
}

Result<ShmMount> FindShmMount(const PodTemplate& t, const PodFacts& facts) {
  JsonNode spec = t.spec;
  auto spec_pointer = [&] { return t.spec_pointer; };
  auto volumes = OptionalList(spec, "volumes", spec_pointer);
  if (!volumes) return volumes.error();
  if (t.shared_volumes && !t.shared_volumes.IsArray()) {
    return MakeError(Code::kInvalidInput, "must be a list", t.shared_volumes_pointer);
  }
  std::set<std::string, std::less<>> names;
  for (const ContainerFacts& c : facts.containers) {
    auto mounts = OptionalList(c.node, "volumeMounts", [&] { return c.pointer; });
    if (!mounts) return mounts.error();
    for (JsonNode m : mounts->Items()) {
      JsonNode name = m.Find("name");
      if (IsShmPath(m.Find("mountPath")) && name.IsString()) names.emplace(name.String());
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
  // The pod's own volumes first, then those it shares (an Argo Workflow's) when a container
  // mounts one: an unmounted "dshm" is only adopted from the pod's own.
  const std::pair<JsonNode, std::string> lists[] = {
      {*volumes, t.spec_pointer + "/volumes"},
      {names.empty() ? JsonNode() : t.shared_volumes, t.shared_volumes_pointer}};
  for (const auto& [list, pointer] : lists) {
    int index = 0;
    for (JsonNode declared : list.Items()) {
      if (declared.Find("name").Is(wanted)) {
        m.volume = declared;
        m.volume_pointer = pointer + "/" + std::to_string(index);
        break;
      }
      ++index;
    }
    if (m.volume) break;
  }
  const JsonNode vol = m.volume;
  m.volume_name = wanted;
  if (!vol) {
    if (names.empty()) return ShmMount{};
    m.kind = ShmMountKind::kOther;
    m.description = "volume \"" + wanted + "\", which is not declared in spec.volumes";
    return m;
  }
  const std::string& vol_ptr = m.volume_pointer;
  JsonNode empty_dir = vol.Find("emptyDir");
  if (empty_dir.Find("medium").Is("Memory")) {
    m.kind = ShmMountKind::kMemoryEmptyDir;
    if (JsonNode limit = empty_dir.Find("sizeLimit")) {
      auto bytes = ReadQuantityField(limit, vol_ptr + "/emptyDir/sizeLimit");
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
  } else if (JsonNode host = vol.Find("hostPath")) {
    JsonNode p = host.Find("path");
    m.description = "hostPath " + (p.IsString() ? std::string(p.String()) : std::string("?")) +
                    " (the node's shared memory, not bounded by the pod)";
  } else {
    std::string type = "a non-emptyDir";
    for (const auto& [key, value] : vol.Members()) {
      if (key != "name") type = key;
    }
    m.description = type + " volume \"" + wanted + "\"";
  }
  return m;
}

Result<PodPatch> BuildPodPatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                               const PatchOptions& o) {
  PodPatch p;
  JsonNode spec = t.spec;
  const std::string& sp = t.spec_pointer;
  const std::string required = FormatBytes(o.required_bytes);

  // 1. The volume.
  std::string volume_name = mount.volume_name;
  if (mount.kind == ShmMountKind::kNone) {
    std::set<std::string, std::less<>> taken;
    for (JsonNode list : {spec.Find("volumes"), t.shared_volumes}) {
      for (JsonNode v : list.Items()) {
        JsonNode n = v.Find("name");
        if (n.IsString()) taken.emplace(n.String());
      }
    }
    volume_name = kShmVolumeName;
    for (int i = 1; taken.count(volume_name); ++i) volume_name = kShmVolumeName + ("-" + std::to_string(i));
    std::string vol = R"({"emptyDir":{"medium":"Memory","sizeLimit":)" + JsonQuoted(required) +
                      R"(},"name":)" + JsonQuoted(volume_name) + "}";
    if (spec.Find("volumes")) {
      p.ops.Add(sp + "/volumes/-", vol);
    } else {
      p.ops.Add(sp + "/volumes", "[" + vol + "]");
    }
    if (o.describe_changes) {
      p.changes.push_back("add volume " + volume_name + ": emptyDir {medium: Memory, sizeLimit: " + required + "}");
    }
  } else if (!mount.size_limit || *mount.size_limit < o.required_bytes) {
    std::string path = mount.volume_pointer + "/emptyDir/sizeLimit";
    JsonNode empty_dir = mount.volume.Find("emptyDir");
    if (empty_dir.Find("sizeLimit")) {
      p.ops.Replace(path, JsonQuoted(required));
    } else {
      p.ops.Add(path, JsonQuoted(required));
    }
    if (o.describe_changes) {
      p.changes.push_back("raise sizeLimit of volume " + volume_name + " from " +
                          (mount.size_limit ? FormatBytes(*mount.size_limit) : "unset") + " to " + required);
    }
  }

  // 2. The /dev/shm mounts; 3. IPC_LOCK.
  std::vector<std::string> mounted, locked;
  const std::string shm_mount = R"({"mountPath":")" + std::string(kShmPath) + R"(","name":)" +
                            JsonQuoted(volume_name) + "}";
  for (const auto& c : facts.containers) {
    JsonNode cj = c.node;
    bool wants_mount = !c.init || Selected(o.init_container_mounts, c);
    if (wants_mount && !MountsShm(cj)) {
      auto mounts = OptionalList(cj, "volumeMounts", [&] { return c.pointer; });
      if (!mounts) return mounts.error();
      if (*mounts) {
        p.ops.Add(c.pointer + "/volumeMounts/-", shm_mount);
      } else {
        p.ops.Add(c.pointer + "/volumeMounts", "[" + shm_mount + "]");
      }
      if (o.describe_changes) mounted.push_back(c.name);
    }
    if (c.init || !Selected(o.ipc_lock, c)) continue;
    JsonNode sc = cj.Find("securityContext");
    if (!sc) {
      p.ops.Add(c.pointer + "/securityContext", R"({"capabilities":{"add":["IPC_LOCK"]}})");
    } else {
      if (!sc.IsObject()) {
        return MakeError(Code::kInvalidInput, "must be an object", c.pointer + "/securityContext");
      }
      if (sc.Find("privileged").Bool()) continue;  // has every capability
      std::string caps_ptr = c.pointer + "/securityContext/capabilities";
      JsonNode caps = sc.Find("capabilities");
      if (!caps) {
        p.ops.Add(caps_ptr, R"({"add":["IPC_LOCK"]})");
      } else {
        if (!caps.IsObject()) return MakeError(Code::kInvalidInput, "must be an object", caps_ptr);
        auto list = OptionalList(caps, "add", [&] { return caps_ptr; });
        if (!list) return list.error();
        bool granted = false;
        for (JsonNode cap : list->Items()) granted = granted || GrantsIpcLock(cap);
        if (!*list) {
          p.ops.Add(caps_ptr + "/add", R"(["IPC_LOCK"])");
        } else if (!granted) {
          p.ops.Add(caps_ptr + "/add/-", R"("IPC_LOCK")");
        } else {
          continue;
        }
      }
    }
    if (o.describe_changes) locked.push_back(c.name);
  }
  if (!mounted.empty()) p.changes.push_back("mount " + volume_name + " at /dev/shm in " + JoinNames(mounted));
  if (!locked.empty()) p.changes.push_back("add capability IPC_LOCK to " + JoinNames(locked));

  // 4. hostIPC.
  JsonNode host_ipc = spec.Find("hostIPC");
  if (o.host_ipc && t.has_host_ipc && !host_ipc.Bool()) {
    if (host_ipc) {
      p.ops.Replace(sp + "/hostIPC", "true");
    } else {
      p.ops.Add(sp + "/hostIPC", "true");
    }
    if (o.describe_changes) p.changes.push_back("set hostIPC: true");
  }

  // 5. Annotations on the pod template.
  JsonNode existing = t.metadata.Find("annotations");
  if (existing && !existing.IsObject()) {
    return MakeError(Code::kInvalidInput, "must be a mapping", t.metadata_pointer + "/annotations");
  }
  std::vector<std::string> keys;  // missing or different, in sorted order (a std::map's)
  std::string missing = "{";       // those annotations as a JSON object
  for (const auto& [key, value] : o.annotations) {
    if (existing.Find(key).Is(value)) continue;
    if (!keys.empty()) missing += ',';
    AppendJsonQuoted(key, missing);
    missing += ':';
    AppendJsonQuoted(value, missing);
    keys.push_back(key);
  }
  missing += '}';
  if (!keys.empty()) {
    if (!t.metadata) {
      p.ops.Add(t.metadata_pointer, R"({"annotations":)" + missing + "}");
    } else if (!existing) {
      p.ops.Add(t.metadata_pointer + "/annotations", missing);
    } else {
      for (const auto& key : keys) {
        std::string path = t.metadata_pointer + "/annotations/" + EscapePointerToken(key);
        if (existing.Find(key)) {
          p.ops.Replace(path, JsonQuoted(o.annotations.at(key)));
        } else {
          p.ops.Add(path, JsonQuoted(o.annotations.at(key)));
        }
      }
    }
    if (o.describe_changes) p.changes.push_back("set annotation" + std::string(keys.size() > 1 ? "s " : " ") + JoinNames(keys));
  }
  return p;
}

}  // namespace shmguard
