// ReadShmMount: the volumes of a pod template and what is mounted at /dev/shm; ReadShm and
// DescribeShm: what an operator or Docker puts there, and the words for it.
#include "core/facts/shm_mount.h"

#include <set>
#include <string>

#include "core/facts/pod_facts.h"
#include "core/values/docker_bytes.h"
#include "core/values/quantity.h"

namespace shmguard {

bool IsShmMountPath(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path == kShmPath;
}

namespace {

std::string JoinNames(const std::set<std::string, std::less<>>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Result<ShmMount> ReadShmMount(const PodTemplate& t, PodFacts& f) {
  JsonNode volumes = t.spec.Find("volumes");
  if (volumes && !volumes.IsArray())
    return MakeError(Code::kInvalidInput, "must be a list", Location::Pointer(t.spec_pointer + "/volumes"));
  if (t.shared_volumes && !t.shared_volumes.IsArray()) {
    return MakeError(Code::kInvalidInput, "must be a list", Location::Pointer(t.shared_volumes_pointer));
  }
  f.has_volumes = static_cast<bool>(volumes);
  for (JsonNode list : {volumes, t.shared_volumes}) {
    for (JsonNode v : list.Items()) {
      if (JsonNode n = v.Find("name"); n.IsString()) f.volume_names.push_back(n.String());
    }
  }
  std::set<std::string, std::less<>> names;
  for (const ContainerFacts& c : f.containers) {
    if (c.shm_volume) names.insert(*c.shm_volume);
  }
  if (names.size() > 1) {
    return MakeError(Code::kInvalidInput,
                     "containers mount different volumes at /dev/shm (" + JoinNames(names) +
                         "); all processes of a pod must share one /dev/shm",
                     Location::Pointer(t.spec_pointer));
  }

  ShmMount m;
  std::string wanted = names.empty() ? kShmVolumeName : *names.begin();
  // The pod's own volumes first, then those it shares (an Argo Workflow's) when a container
  // mounts one: an unmounted "dshm" is only adopted from the pod's own.
  const std::pair<JsonNode, std::string> lists[] = {
      {volumes, t.spec_pointer + "/volumes"},
      {names.empty() ? JsonNode() : t.shared_volumes, t.shared_volumes_pointer}};
  JsonNode vol;
  for (const auto& [list, pointer] : lists) {
    int index = 0;
    for (JsonNode declared : list.Items()) {
      if (declared.Find("name").Is(wanted)) {
        vol = declared;
        m.volume_pointer = pointer + "/" + std::to_string(index);
        break;
      }
      ++index;
    }
    if (vol) break;
  }
  m.volume_name = wanted;
  if (!vol) {
    if (names.empty()) return ShmMount{};
    m.kind = ShmMountKind::kOther;
    m.description = "volume \"" + wanted + "\", which is not declared in spec.volumes";
    return m;
  }
  JsonNode empty_dir = vol.Find("emptyDir");
  if (empty_dir.Find("medium").Is("Memory")) {
    m.kind = ShmMountKind::kMemoryEmptyDir;
    if (JsonNode limit = empty_dir.Find("sizeLimit")) {
      auto bytes = ReadSizeField(limit, {m.volume_pointer, "/emptyDir/sizeLimit"});
      if (!bytes) return bytes.error();
      if (*bytes > 0) m.size_limit = *bytes;
    }
    m.description = "emptyDir Memory " + (m.size_limit ? FormatBytes(*m.size_limit) : std::string("without sizeLimit"));
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

Result<ShmMount> ReadShm(const PodTemplate& t, const PodFacts& facts) {
  if (t.compose_service) return FindServiceShm(t);
  ShmMount mount = facts.shm;
  if (!t.operator_shm || mount.kind != ShmMountKind::kNone || facts.containers.empty() || facts.containers[0].init) {
    return mount;
  }
  const ContainerFacts& ray = facts.containers[0];
  mount.kind = ShmMountKind::kMemoryEmptyDir;
  mount.volume_name = "shared-mem";
  mount.implicit = true;
  mount.description =
      "emptyDir Memory without sizeLimit (KubeRay's shared-mem: the Ray container has no memory limit or request)";
  if (auto bytes = ray.memory_limit ? ray.memory_limit : ray.memory_request) {
    mount.size_limit = *bytes;
    mount.description = "emptyDir Memory " + FormatBytes(*bytes) +
                        " (KubeRay's shared-mem: the Ray container's memory " +
                        (ray.memory_limit ? "limit)" : "request)");
  }
  return mount;
}

std::string DescribeShm(const ShmMount& mount, const PodTemplate& t, const PodFacts& facts) {
  if (mount.kind != ShmMountKind::kNone) return mount.description;
  if (!t.shm_unknown.empty()) return "unknown (" + t.shm_unknown + ")";
  if (t.compose_service) return facts.host_ipc ? "the host's /dev/shm (ipc: host)" : "64Mi (Docker's default)";
  return facts.host_ipc ? "the node's /dev/shm (hostIPC: true)" : "64Mi (container default)";
}

Result<ShmMount> FindServiceShm(const PodTemplate& t) {
  JsonNode service = t.compose_service;
  JsonNode ipc = service.Find("ipc");
  ShmMount m;
  if (ipc.Is("host")) return m;  // the host's /dev/shm: PodFacts::host_ipc
  std::string_view mode = ipc.String();
  if (mode == "none") {
    m.kind = ShmMountKind::kOther;
    m.description = "nothing (ipc: none: the container has no /dev/shm)";
    return m;
  }
  for (std::string_view prefix : {"service:", "container:"}) {
    if (mode.rfind(prefix, 0) == 0) {
      m.kind = ShmMountKind::kOther;
      m.description = "the IPC namespace of " + std::string(prefix.substr(0, prefix.size() - 1)) + " " +
                      std::string(mode.substr(prefix.size())) + " (ipc: " + std::string(mode) + ")";
      return m;
    }
  }
  JsonNode size = service.Find("shm_size");
  if (!size) return m;
  auto bytes = ReadComposeBytes(size, t.spec_pointer + "/shm_size");
  if (!bytes) return bytes.error();
  m.kind = ShmMountKind::kMemoryEmptyDir;
  m.implicit = true;  // Docker mounts it on the container
  m.size_limit = *bytes;
  m.description = "shm_size " + (size.IsString() ? std::string(size.String()) : size.Dump()) +
                  (size.IsString() ? " (" + FormatBytes(*bytes) + ")" : "");
  return m;
}

}  // namespace shmguard
