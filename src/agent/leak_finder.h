// LeakFinder: the node agent's reading of leaked segments (core/node/leaked_segments.h) —
// what is in a pod's /dev/shm volume (lstat, without following a symlink, to a bounded depth and
// count), which of it the pod's processes hold (their /proc/PID/cgroup names the pod; their
// /proc/PID/fd and /proc/PID/maps the files), and the deletion of what none holds while none of
// its containers runs. Reading other pods' processes takes the host's PID namespace and
// CAP_SYS_PTRACE (the chart's agent.leakedSegments); deleting, a writable kubelet pod directory
// (agent.reclaimLeakedSegments).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/node/leaked_segments.h"

namespace shmguard::agent {

struct LeakFinderOptions {
  std::string proc_dir = "/proc";
  size_t max_entries = 10'000;  // a volume listing stops there (and says so)
  int max_depth = 4;            // subdirectories followed below the volume
};

// The processes of one pod on this node, and the containers they run in (PodContainerOf).
struct PodProcesses {
  std::vector<int> pids;
  std::set<std::string> containers;
};

// One volume's listing; `error` says why it is partial or empty ("" when whole).
struct VolumeListing {
  std::vector<ShmEntry> entries;
  std::string error;
};

class LeakFinder {
 public:
  explicit LeakFinder(LeakFinderOptions options) : options_(std::move(options)) {}

  // The processes of each pod of `uids` (those whose cgroup is the pod's), from one pass over
  // every /proc/PID; a pod without any has an empty entry.
  std::map<std::string, PodProcesses> ProcessesOf(const std::set<std::string>& uids) const;
  // Every file `pids` hold open (fd) or map (maps); a process gone meanwhile is skipped. A
  // process whose fds or maps cannot be read (EACCES: the agent lacks CAP_SYS_PTRACE or
  // CAP_DAC_READ_SEARCH) is named in `unreadable`: then nothing can be called leaked.
  std::set<FileId> HeldBy(const std::vector<int>& pids, std::string& unreadable) const;
  // The entries under `dir`, a volume's directory, never following a symlink.
  VolumeListing List(const std::string& dir) const;
  // Deletes `leaked`'s files under `dir` whose entry is still the same file (lstat: its FileId)
  // and still held by none of `held`. Returns the bytes deleted; `error` names the first file
  // that could not be (a read-only mount: EROFS).
  int64_t Reclaim(const std::string& dir, const LeakedSegments& leaked, const std::set<FileId>& held,
                  std::string& error) const;

 private:
  LeakFinderOptions options_;
};

}  // namespace shmguard::agent
