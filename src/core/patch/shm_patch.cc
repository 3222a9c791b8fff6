// BuildPodPatch: the operations from today's /dev/shm (ReadPodFacts) to the planned one.
#include "core/patch/shm_patch.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/values/compact_json.h"
#include "core/values/json_patch.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool Selected(ContainerSelection sel, const ContainerFacts& c) {
  return sel == ContainerSelection::kAll || (sel == ContainerSelection::kGpuContainers && c.gpus > 0);
}

// 1. The volume: a memory emptyDir named dshm (or dshm-1... when taken) where nothing is at
// /dev/shm, or its sizeLimit raised. Returns the name of the volume at /dev/shm.
std::string PatchVolume(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount, const PatchOptions& o,
                        PodPatch& p) {
  const std::string& sp = t.spec_pointer;
  const std::string required = FormatBytes(o.required_bytes);
  std::string volume_name = mount.volume_name;
  if (!o.shm) {
    // Exempted: no volume, no mounts.
  } else if (mount.kind == ShmMountKind::kNone) {
    volume_name = kShmVolumeName;
    for (int i = 1;
         std::find(facts.volume_names.begin(), facts.volume_names.end(), volume_name) != facts.volume_names.end();
         ++i) {
      volume_name = kShmVolumeName + ("-" + std::to_string(i));
    }
    std::string vol = R"({"emptyDir":{"medium":"Memory","sizeLimit":)" + JsonQuoted(required) + R"(},"name":)" +
                      JsonQuoted(volume_name) + "}";
    if (facts.has_volumes) {
      p.ops.Add(sp + "/volumes/-", vol);
    } else {
      p.ops.Add(sp + "/volumes", "[" + vol + "]");
    }
    p.volume = true;
    p.shm_pointer = sp + "/volumes";
    if (o.describe_changes) {
      p.changes.push_back("add volume " + volume_name + ": emptyDir {medium: Memory, sizeLimit: " + required + "}");
    }
  } else if (mount.size_limit && *mount.size_limit < o.required_bytes) {
    // A memory emptyDir without sizeLimit is left as written: the kubelet sizes it at the pod's
    // memory limit (node memory without one), and a sizeLimit would only make it smaller.
    std::string path = mount.volume_pointer + "/emptyDir/sizeLimit";
    p.ops.Replace(path, JsonQuoted(required));
    p.volume = true;
    p.shm_pointer = path;
    if (o.describe_changes) {
      p.changes.push_back("raise sizeLimit of volume " + volume_name + " from " + FormatBytes(*mount.size_limit) +
                          " to " + required);
    }
  }
  return volume_name;
}

// 2. The /dev/shm mounts of `volume_name`; 3. IPC_LOCK where the options add it.
void PatchContainers(const PodFacts& facts, const std::string& volume_name, const PatchOptions& o, PodPatch& p) {
  std::vector<std::string> mounted, locked;
  const std::string shm_mount =
      R"({"mountPath":")" + std::string(kShmPath) + R"(","name":)" + JsonQuoted(volume_name) + "}";
  for (const auto& c : facts.containers) {
    bool wants_mount = o.shm && (!c.init || Selected(o.init_container_mounts, c));
    if (wants_mount && !c.mounts_shm) {
      if (c.has_volume_mounts) {
        p.ops.Add(c.pointer + "/volumeMounts/-", shm_mount);
      } else {
        p.ops.Add(c.pointer + "/volumeMounts", "[" + shm_mount + "]");
      }
      mounted.push_back(c.name);
      if (p.shm_pointer.empty()) p.shm_pointer = c.pointer + "/volumeMounts";
    }
    if (c.init || !AddsIpcLock(c, o.ipc_lock)) continue;
    const std::string caps = c.pointer + "/securityContext/capabilities";
    switch (c.ipc_lock) {
      case IpcLock::kGranted: continue;
      case IpcLock::kNoSecurityContext:
        p.ops.Add(c.pointer + "/securityContext", R"({"capabilities":{"add":["IPC_LOCK"]}})");
        break;
      case IpcLock::kNoCapabilities: p.ops.Add(caps, R"({"add":["IPC_LOCK"]})"); break;
      case IpcLock::kNoAddList: p.ops.Add(caps + "/add", R"(["IPC_LOCK"])"); break;
      case IpcLock::kNotAdded: p.ops.Add(caps + "/add/-", R"("IPC_LOCK")"); break;
    }
    if (locked.empty()) {
      p.lock_pointer = caps + "/add";
      p.lock_reason = IpcLockReason(c, o.ipc_lock);
      p.lock_user = c.run_as_source;
    }
    locked.push_back(c.name);
  }
  if (o.describe_changes && !mounted.empty()) {
    p.changes.push_back("mount " + volume_name + " at /dev/shm in " + JoinNames(mounted));
  }
  if (o.describe_changes && !locked.empty()) p.changes.push_back("add capability IPC_LOCK to " + JoinNames(locked));
  p.mounted = std::move(mounted);
  p.locked = std::move(locked);
}

// 4. hostIPC, where the kind has it and the options set it.
void PatchHostIpc(const PodTemplate& t, const PodFacts& facts, const PatchOptions& o, PodPatch& p) {
  const std::string& sp = t.spec_pointer;
  if (o.host_ipc && t.has_host_ipc && !facts.host_ipc) {
    if (facts.host_ipc_written) {
      p.ops.Replace(sp + "/hostIPC", "true");
    } else {
      p.ops.Add(sp + "/hostIPC", "true");
    }
    p.host_ipc = true;
    if (o.describe_changes) p.changes.push_back("set hostIPC: true");
  }
}

// 5. Annotations on the pod template: those missing or different, each as its own operation
// where the template has some, else as one object.
Result<bool> PatchAnnotations(const PodTemplate& t, const PatchOptions& o, PodPatch& p) {
  JsonNode existing = t.metadata.Find("annotations");
  if (existing && !existing.IsObject()) {
    return MakeError(Code::kInvalidInput, "must be a mapping", Location::Pointer(t.metadata_pointer + "/annotations"));
  }
  std::vector<std::string> keys;  // missing or different, in sorted order (a std::map's)
  std::string missing = "{";      // those annotations as a JSON object
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
    if (o.describe_changes)
      p.changes.push_back("set annotation" + std::string(keys.size() > 1 ? "s " : " ") + JoinNames(keys));
  }
  return true;
}

}  // namespace

Result<PodPatch> BuildPodPatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                               const PatchOptions& o) {
  PodPatch p;
  const std::string volume_name = PatchVolume(t, facts, mount, o, p);
  PatchContainers(facts, volume_name, o, p);
  PatchHostIpc(t, facts, o, p);
  auto annotated = PatchAnnotations(t, o, p);
  if (!annotated) return annotated.error();
  return p;
}

}  // namespace shmguard
