// The sampler: one round of statfs over every /dev/shm volume of the table's pods, under the
// kubelet's directory, fed into their ShmWatches. It decides and returns what is to be done
// outside the table's lock: the volumes that crossed the threshold, the peaks to write, and the
// resizes that took effect or timed out. statfs on a tmpfs is exact and costs one system call;
// the kubelet's Summary API refreshes every 1–2 minutes, too slow to see a DataLoader's peak.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/pod_table.h"

namespace shmguard::agent {

// statfs of a path: used and total bytes of the file system there, and whether it is a tmpfs.
struct FsUse {
  uint64_t used = 0, size = 0;
  bool tmpfs = false;
};
using StatFs = std::function<std::optional<FsUse>(const std::string& path)>;
// The real one (statfs(2)); nullopt when the path is not there.
std::optional<FsUse> StatFsPath(const std::string& path);

// A resize that took effect (the tmpfs was remounted larger) or was not within its time.
struct ResizeOutcome {
  AgentPod pod;
  std::string volume;
  GrowthState state;
  bool grown = false;  // false: timed out
};

struct SampleRound {
  struct Crossed {
    AgentPod pod;
    std::string volume;
    ShmWatch watch;
  };
  std::vector<Crossed> crossed;        // a volume's use rose to the threshold
  std::vector<AgentPod> peaks;         // a higher peak to write (at a crossing, or each interval)
  std::vector<ResizeOutcome> resizes;  // settled in this round
};

struct SamplerOptions {
  std::string kubelet_dir = "/var/lib/kubelet";
  std::chrono::milliseconds record_interval{30000};  // a growing peak is written at most this often
  std::chrono::milliseconds resize_timeout{120000};  // a resize neither applied nor refused by then
};

// One round over `table` at `now`.
SampleRound Sample(PodTable& table, const StatFs& statfs, const SamplerOptions& options, Clock::time_point now);

}  // namespace shmguard::agent
