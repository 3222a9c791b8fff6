// Every Event the node agent records: its reason and type in one table, and its words, made from
// numbers here and nowhere else (as the checks' catalogue does for findings). A new Event is a
// row of kAgentEvents and a function below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shmguard::agent {

enum class AgentEvent {
  kShmNearFull,             // a volume crossed the threshold
  kShmGrown,                // a /dev/shm grown in place
  kShmGrowthRefused,        // not grown: refused, rejected, timed out
  kShmLeaked,               // files no process of the pod holds, after a restart
  kShmLeakReclaimed,        // those files deleted
  kShmLeakNotReclaimed,     // those files could not be deleted
  kShmUnpatched,            // a pod running with less /dev/shm than shmguard would give it
  kShmHidesDeviceMount,     // a volume hides a device plugin's mount at /dev/shm
  kShmMemoryLimitBelowShm,  // a pod's memory limit no longer holds its /dev/shm (resize-below-shm's words)
};

struct AgentEventInfo {
  AgentEvent event;
  std::string_view reason;  // the Event's reason: "ShmNearFull"
  std::string_view type;    // "Normal" or "Warning"
};

const AgentEventInfo& InfoOf(AgentEvent e);

// "300.0 MiB": bytes in MiB with one decimal, as the Events write them.
std::string Mib(uint64_t bytes);

// ShmNearFull: "/dev/shm (volume V) is P% full: U of S used, peak K. ...".
std::string NearFullWords(const std::string& volume, uint64_t used, uint64_t size, uint64_t peak);
// ShmGrown, in `ms` milliseconds; `sizes` "1Gi to 2Gi".
std::string GrownWords(const std::string& volume, const std::string& sizes, int64_t ms);
// ShmGrowthRefused before a resize was sent (`why`: the refusal in words), or when the API
// server refused it (`sizes` "1Gi to 2Gi" given).
std::string NotGrownWords(const std::string& volume, const std::string& sizes, const std::string& why, uint64_t peak);
// ShmGrowthRefused: a resize neither applied nor refused within `ms`.
std::string GrowthTimedOutWords(const std::string& volume, const std::string& sizes, int64_t ms);
// ShmGrowthRefused: the kubelet refused the resize `ms` after it was sent, saying `message`.
std::string KubeletRefusedWords(const std::string& volume, const std::string& sizes, int64_t ms,
                                const std::string& message);
// ShmLeaked: `files` files of `bytes` left after `restarts` container restarts.
std::string LeakedWords(int64_t files, int64_t bytes, int64_t restarts);
// ShmLeakReclaimed: `files` files of `bytes` deleted from `volume`; `error` when not all were.
std::string LeakReclaimedWords(const std::string& volume, size_t files, int64_t bytes, const std::string& error);
// ShmLeakNotReclaimed: why `volume`'s leaked files could not be deleted.
std::string LeakNotReclaimedWords(const std::string& volume, const std::string& error);
// ShmLeakNotReclaimed: `volume`'s leaked files not deleted, as the pod asks, because the agent
// reads the pod's status only (LeakMode::kStatus).
std::string LeakNeedsExactWords(const std::string& volume);
// ShmUnpatched: the pod's /dev/shm now (`current`, in words) against what shmguard would give it;
// `policy_made` when an admission policy sized it.
std::string UnpatchedWords(const std::string& current, int64_t required_bytes, bool policy_made);
// ShmHidesDeviceMount: a volume over the device plugin's mount of `resource` at `host_path`.
std::string HidesDeviceMountWords(const std::string& container, const std::string& resource,
                                  const std::string& host_path);

}  // namespace shmguard::agent
