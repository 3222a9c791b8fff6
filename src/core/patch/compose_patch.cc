// BuildServicePatch: a Compose service's patch (shm_size, ulimits.memlock).
#include "core/patch/compose_patch.h"

#include "core/patch/ipc_lock.h"
#include "core/values/compact_json.h"
#include "core/values/docker_bytes.h"

namespace shmguard {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<PodPatch> BuildServicePatch(const PodTemplate& t, const PodFacts& facts, const ShmMount& mount,
                                   const PatchOptions& options) {
  PodPatch p;
  JsonNode service = t.compose_service;
  const std::string& at = t.spec_pointer;
  if (options.shm && !facts.host_ipc && (!mount.size_limit || *mount.size_limit < options.required_bytes)) {
    // With a unit, a string; a plain byte count as an integer, which Compose reads exactly.
    const std::string size = FormatDockerBytes(options.required_bytes);
    const std::string value = IsDigit(size.back()) ? size : JsonQuoted(size);
    if (service.Find("shm_size")) {
      p.ops.Replace(at + "/shm_size", value);
    } else {
      p.ops.Add(at + "/shm_size", value);
    }
    p.volume = true;
    p.shm_pointer = at + "/shm_size";
    if (options.describe_changes) {
      p.changes.push_back("set shm_size: " + size + " (was " +
                          (mount.size_limit ? FormatDockerBytes(*mount.size_limit)
                                            : "Docker's " + FormatDockerBytes(kDockerDefaultShmBytes)) +
                          ")");
    }
  }
  if (facts.containers.empty() || !AddsMemlockUlimit(facts.containers[0], options.ipc_lock)) return p;
  JsonNode ulimits = service.Find("ulimits");
  JsonNode memlock = ulimits.Find("memlock");
  auto unlimited = [](JsonNode v) { return v.IsInteger() && v.Integer() == -1; };
  if (unlimited(memlock) || (unlimited(memlock.Find("soft")) && unlimited(memlock.Find("hard")))) return p;
  p.locked.push_back(t.label.substr(t.label.find(' ') + 1));  // the service's name
  p.lock_pointer = at + "/ulimits/memlock";
  p.lock_reason = IpcLockReason(facts.containers[0], options.ipc_lock);
  if (!ulimits) {
    p.ops.Add(at + "/ulimits", R"({"memlock":-1})");
  } else if (!ulimits.IsObject()) {
    return MakeError(Code::kInvalidInput, "must be a mapping of ulimits", Location::Pointer(at + "/ulimits"));
  } else if (!memlock) {
    p.ops.Add(at + "/ulimits/memlock", "-1");
  } else {
    p.ops.Replace(at + "/ulimits/memlock", "-1");
  }
  if (options.describe_changes) {
    p.changes.push_back("set ulimits.memlock: -1 (unlimited locked memory, for RDMA registration; " +
                        (memlock ? "was " + memlock.Dump() : std::string("was the host's default")) + ")");
  }
  return p;
}

}  // namespace shmguard
