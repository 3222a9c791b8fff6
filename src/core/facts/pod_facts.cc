// ReadPodFacts: containers (GPUs, memory, /dev/shm mounts, IPC_LOCK), the memory limit and the
// volumes of a pod template; its processes, nodes and NCCL settings are read by launch_facts.cc.
#include "core/facts/pod_facts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string_view>

#include "core/facts/launch_facts.h"
#include "core/plan/shm_plan.h"
#include "core/values/json_patch.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

// `where` in pieces, joined only for the error.
Result<int64_t> CheckedAdd(int64_t a, int64_t b, std::initializer_list<std::string_view> where) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    return MakeError(Code::kInvalidInput, "sum overflows 2^63-1", Location::Pointer(Joined(where)));
  }
  return r;
}

// GPUs and memory of one container, as written (a zero memory limit included), and the first
// RDMA and MPS resources it asks for ("" none).
struct ContainerResources {
  int64_t gpus = 0;
  std::optional<int64_t> memory_limit, memory_request;
  std::string rdma_resource, mps_resource;
};

// `memory_request`: also read requests.memory (only KubeRay's sizing of its shared-mem needs it).
Result<ContainerResources> ReadResources(JsonNode c, const std::string& pointer, const Policy& policy,
                                         bool memory_request) {
  ContainerResources r;
  JsonNode res = c.Find("resources");
  if (!res) return r;
  if (!res.IsObject())
    return MakeError(Code::kInvalidInput, "must be an object", Location::Pointer(pointer + "/resources"));
  JsonNode limits = res.Find("limits");
  JsonNode requests = res.Find("requests");
  for (const auto& [field, obj] : {std::pair{"limits", limits}, std::pair{"requests", requests}}) {
    if (obj && !obj.IsObject()) {
      return MakeError(Code::kInvalidInput, "must be an object", Location::Pointer(pointer + "/resources/" + field));
    }
  }
  for (const auto& name : policy.gpu_resources) {
    JsonNode value = limits.Find(name);
    const char* from = "limits/";
    if (!value) {
      value = requests.Find(name);
      from = "requests/";
    }
    if (!value) continue;
    const std::string token = EscapePointerToken(name);  // "nvidia.com~1gpu" (RFC 6901)
    auto n = ReadQuantityField(value, {pointer, "/resources/", from, token});
    if (!n) return n.error();
    if (*n < 0)
      return MakeError(Code::kInvalidInput, "must not be negative",
                       Location::Pointer(pointer + "/resources/" + from + token));
    auto sum = CheckedAdd(r.gpus, *n, {pointer, "/resources/", from, token});
    if (!sum) return sum.error();
    r.gpus = *sum;
  }
  if (JsonNode memory = limits.Find("memory")) {
    auto m = ReadSizeField(memory, {pointer, "/resources/limits/memory"});
    if (!m) return m.error();
    r.memory_limit = *m;
  }
  if (JsonNode memory = memory_request ? requests.Find("memory") : JsonNode()) {
    auto m = ReadSizeField(memory, {pointer, "/resources/requests/memory"});
    if (!m) return m.error();
    r.memory_request = *m;
  }
  r.rdma_resource = FindResource({limits, requests}, policy.rdma_resources);
  if (r.gpus > 0) r.mps_resource = FindResource({limits, requests}, policy.mps_resources);
  return r;
}

// runAsUser and runAsNonRoot of a securityContext, as far as it states them.
struct RunAsFields {
  std::optional<int64_t> user;
  std::optional<bool> non_root;
};

Result<RunAsFields> ReadRunAsFields(JsonNode sc, const std::string& pointer) {
  RunAsFields out;
  if (!sc || !sc.IsObject()) return out;  // a wrong type is reported where the fields are used
  if (JsonNode user = sc.Find("runAsUser"); user && !user.IsNull()) {
    if (!user.IsInteger() || user.Integer() < 0) {
      return MakeError(Code::kInvalidInput, "must be a user ID (a whole number, 0 or more)",
                       Location::Pointer(pointer + "/securityContext/runAsUser"));
    }
    out.user = user.Integer();
  }
  if (JsonNode non_root = sc.Find("runAsNonRoot"); non_root.IsBool()) out.non_root = non_root.Bool();
  return out;
}

// Whom a container runs as: its own runAsUser and runAsNonRoot, else the pod's (the
// container's securityContext overrides the pod's, field by field).
void ResolveRunAs(const RunAsFields& own, const RunAsFields& pod, ContainerFacts& cf) {
  const std::optional<int64_t> user = own.user ? own.user : pod.user;
  const bool non_root = own.non_root.value_or(pod.non_root.value_or(false));
  const char* whose = own.user ? "" : " (pod)";
  if (user && *user > 0) {
    cf.run_as = RunAs::kNonRoot;
    cf.run_as_source = "runAsUser " + std::to_string(*user) + whose;
  } else if (non_root) {
    cf.run_as = RunAs::kNonRoot;
    cf.run_as_source = std::string("runAsNonRoot: true") + (own.non_root ? "" : " (pod)");
  } else if (user) {
    cf.run_as = RunAs::kRoot;
    cf.run_as_source = std::string("runAsUser 0") + whose;
  } else {
    cf.run_as = RunAs::kUnknown;
    cf.run_as_source = "runAsUser unset";
  }
}

bool IsShmPath(JsonNode mount_path) { return mount_path.IsString() && IsShmMountPath(mount_path.String()); }

// Container runtimes accept "ipc_lock" and "CAP_IPC_LOCK" alike; "ALL" grants it too.
bool GrantsIpcLock(JsonNode cap) {
  if (!cap.IsString()) return false;
  std::string c(cap.String());
  for (auto& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return c == "IPC_LOCK" || c == "CAP_IPC_LOCK" || c == "ALL";
}

Result<IpcLock> ReadIpcLock(JsonNode c, const std::string& pointer) {
  JsonNode sc = c.Find("securityContext");
  if (!sc) return IpcLock::kNoSecurityContext;
  if (!sc.IsObject())
    return MakeError(Code::kInvalidInput, "must be an object", Location::Pointer(pointer + "/securityContext"));
  if (sc.Find("privileged").Bool()) return IpcLock::kGranted;  // has every capability
  JsonNode caps = sc.Find("capabilities");
  if (!caps) return IpcLock::kNoCapabilities;
  const std::string caps_ptr = pointer + "/securityContext/capabilities";
  if (!caps.IsObject()) return MakeError(Code::kInvalidInput, "must be an object", Location::Pointer(caps_ptr));
  JsonNode add = caps.Find("add");
  if (!add) return IpcLock::kNoAddList;
  if (!add.IsArray()) return MakeError(Code::kInvalidInput, "must be a list", Location::Pointer(caps_ptr + "/add"));
  for (JsonNode cap : add.Items()) {
    if (GrantsIpcLock(cap)) return IpcLock::kGranted;
  }
  return IpcLock::kNotAdded;
}

// A container's facts, read on their own: `first` is whether it is the pod's first container
// (KubeRay's sizing reads its memory request; a kind's RDMA reason goes to it).
Result<ContainerFacts> ReadContainer(JsonNode c, const std::string& pointer, bool init, std::string fallback_name,
                                     const PodTemplate& t, const Policy& policy, const RunAsFields& pod_run_as,
                                     bool first) {
  if (t.budget && t.budget->Exhausted()) {  // Evaluate answers review-over-budget
    return MakeError(Code::kUnsupportedKind, "the review's work budget is spent", Location::Pointer(pointer));
  }
  if (!c.IsObject()) return MakeError(Code::kInvalidInput, "must be a container object", Location::Pointer(pointer));
  ContainerFacts cf;
  JsonNode name = c.Find("name");
  cf.name = name.IsString() ? std::string(name.String()) : std::move(fallback_name);
  cf.pointer = pointer;
  cf.init = init;
  cf.sidecar = init && c.Find("restartPolicy").Is("Always");
  auto res = ReadResources(c, pointer, policy, t.operator_shm && first);
  if (!res) return res.error();
  cf.gpus = res->gpus;
  for (const auto& [user, gpus] : t.claim_gpus) {
    if (user == cf.name) cf.gpus += gpus;  // through resource claims (DRA)
  }
  cf.memory_limit = res->memory_limit;
  cf.memory_request = res->memory_request;
  cf.mps_resource = res->mps_resource;
  JsonNode mounts = c.Find("volumeMounts");
  if (mounts && !mounts.IsArray())
    return MakeError(Code::kInvalidInput, "must be a list", Location::Pointer(pointer + "/volumeMounts"));
  cf.has_volume_mounts = static_cast<bool>(mounts);
  for (JsonNode m : mounts.Items()) {
    if (!IsShmPath(m.Find("mountPath"))) continue;
    cf.mounts_shm = true;
    cf.shm_read_only = cf.shm_read_only || m.Find("readOnly").Bool();
    if (JsonNode volume = m.Find("name"); volume.IsString() && !cf.shm_volume) cf.shm_volume = volume.String();
  }
  if (!init) {
    auto lock = ReadIpcLock(c, pointer);
    if (!lock) return lock.error();
    cf.ipc_lock = *lock;
    auto run_as = ReadRunAsFields(c.Find("securityContext"), pointer);
    if (!run_as) return run_as.error();
    ResolveRunAs(*run_as, pod_run_as, cf);
  }
  if (!res->rdma_resource.empty()) cf.rdma = "requests " + res->rdma_resource;
  if (first && !t.rdma.empty() && cf.rdma.empty()) cf.rdma = t.rdma;
  return cf;
}

// The pod's memory limit as the containers' limits add up (docs/sources.md §3): the app
// containers' and sidecars' summed, the largest init container's, and the first container
// without one (a zero limit counts as none: a container runtime reads memory 0 as unlimited).
struct MemoryTally {
  int64_t app = 0, init = 0;
  std::string missing, missing_pointer, first_pointer;

  Result<bool> Add(const ContainerFacts& c) {
    const std::optional<int64_t> memory = c.memory_limit > 0 ? c.memory_limit : std::nullopt;
    if (!memory) {
      if (missing.empty()) {
        missing = c.name;
        missing_pointer = c.pointer + "/resources/limits/memory";
      }
    } else if (!c.init || c.sidecar) {
      if (first_pointer.empty()) first_pointer = c.pointer + "/resources/limits/memory";
      auto sum = CheckedAdd(app, *memory, {c.pointer, "/resources/limits/memory"});
      if (!sum) return sum.error();
      app = *sum;
    } else {
      init = std::max(init, *memory);
    }
    return true;
  }
};

// The pod's memory limit, its source in words and the field a finding points at.
struct MemoryLimit {
  std::optional<int64_t> bytes;
  std::string source, pointer;
};

// The pod-level limit, else what the containers' limits add up to; the kind's own source and
// pointer (a Compose service's) when it names them.
Result<MemoryLimit> ReadMemoryLimit(const PodTemplate& t, const MemoryTally& tally, bool has_containers) {
  MemoryLimit limit;
  if (JsonNode pod_memory = t.spec.Find("resources").Find("limits").Find("memory")) {
    auto m = ReadSizeField(pod_memory, {t.spec_pointer, "/resources/limits/memory"});
    if (!m) return m.error();
    limit = {*m, "pod-level limit", t.spec_pointer + "/resources/limits/memory"};
  } else if (!tally.missing.empty()) {
    limit = {std::nullopt, "container \"" + tally.missing + "\" has no memory limit", tally.missing_pointer};
  } else if (has_containers) {
    limit = {std::max(tally.app, tally.init), "sum of container limits", tally.first_pointer};
  } else {
    limit = {std::nullopt, "the pod has no containers", t.spec_pointer};
  }
  if (!t.memory_limit_source.empty()) limit.source = t.memory_limit_source;
  if (!t.memory_limit_pointer.empty()) limit.pointer = t.memory_limit_pointer;
  return limit;
}

// Each container of the template's slots, in their order, beside its node (for ReadLaunchFacts).
struct Containers {
  std::vector<ContainerFacts> facts;
  std::vector<JsonNode> nodes;
};

Result<Containers> ReadContainers(const PodTemplate& t, const Policy& policy) {
  auto pod_run_as = ReadRunAsFields(t.spec.Find("securityContext"), t.spec_pointer);
  if (!pod_run_as) return pod_run_as.error();
  Containers out;
  out.facts.reserve(4);  // most pods have one to four containers
  out.nodes.reserve(4);
  auto add = [&](JsonNode c, const std::string& pointer, bool init, std::string fallback_name) -> Result<bool> {
    auto cf = ReadContainer(c, pointer, init, std::move(fallback_name), t, policy, *pod_run_as, out.facts.empty());
    if (!cf) return cf.error();
    out.facts.push_back(std::move(*cf));
    out.nodes.push_back(c);
    return true;
  };
  for (const ContainerSlot& slot : t.containers) {
    JsonNode at = FollowPointer(t.spec, slot.path);
    if (!at) continue;
    std::string pointer = t.spec_pointer + std::string(slot.path);
    if (!slot.list) {
      auto added = add(at, pointer, slot.init, "main");
      if (!added) return added.error();
      continue;
    }
    if (!at.IsArray())
      return MakeError(Code::kInvalidInput, "must be a list of containers", Location::Pointer(pointer));
    size_t i = 0;
    for (JsonNode c : at.Items()) {
      auto added = add(c, pointer + "/" + std::to_string(i), slot.init, "#" + std::to_string(i));
      if (!added) return added.error();
      ++i;
    }
  }
  return out;
}

}  // namespace

Result<PodFacts> ReadPodFacts(const PodTemplate& t, const Policy& policy) {
  auto containers = ReadContainers(t, policy);
  if (!containers) return containers.error();
  PodFacts f;
  MemoryTally memory;
  for (const ContainerFacts& c : containers->facts) {
    if (!c.mps_resource.empty() && f.mps_resource.empty()) {
      f.mps_resource = c.mps_resource;
      f.mps_container = c.name;
      f.mps_pointer = c.pointer + "/resources";
    }
    f.requests_gpus = f.requests_gpus || c.gpus > 0;
    if (!c.init) {
      auto sum = CheckedAdd(f.gpus, c.gpus, {c.pointer});
      if (!sum) return sum.error();
      f.gpus = *sum;
    }
    auto added = memory.Add(c);
    if (!added) return added.error();
  }
  f.containers = std::move(containers->facts);
  auto limit = ReadMemoryLimit(t, memory, !f.containers.empty());
  if (!limit) return limit.error();
  f.memory_limit_bytes = limit->bytes;
  f.memory_limit_source = std::move(limit->source);
  f.memory_limit_pointer = std::move(limit->pointer);
  JsonNode host_ipc = t.spec.Find("hostIPC");
  f.host_ipc = host_ipc.Bool();
  f.host_ipc_written = static_cast<bool>(host_ipc);
  auto shm = ReadShmMount(t, f);
  if (!shm) return shm.error();
  f.shm = std::move(*shm);

  auto launch = ReadLaunchFacts(t, containers->nodes, f);
  if (!launch) return launch.error();
  if (!t.claims_unknown.empty()) {
    f.claims_unknown = t.claims_unknown;
    // Its GPUs may come through those claims: what the launch says is the count.
    if (!f.requests_gpus && (f.procs_stated || f.server)) {
      f.requests_gpus = true;
      if (f.procs_stated) f.gpus = f.procs;
    }
  }
  return f;
}

}  // namespace shmguard
