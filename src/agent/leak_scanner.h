// LeakScanner: which pods' /dev/shm to scan for leaked segments and when, what a scan finds
// (LeakFinder reads the volume, and in the exact mode the processes), what it deletes where that
// is allowed, and the Events and numbers that say so. The sampler's thread runs it before each
// round, so the round's peaks leave leaked bytes out.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_events.h"
#include "agent/collector.h"
#include "agent/leak_finder.h"
#include "agent/pod_table.h"
#include "core/policy/policy.h"

namespace shmguard::agent {

// How the agent finds leaked segments (--leaked-segments, the chart's agent.leakedSegments).
enum class LeakMode {
  kOff,
  // From the pods' status and the files' change times (LeftBehind, core/node/leaked_segments.h):
  // no privilege beyond reading the kubelet's pod directory. Reports; never deletes.
  kStatus,
  // From the pods' processes (FindLeaked: /proc/PID/fd and maps), which takes the host's PID
  // namespace, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH. Reports, and deletes where allowed.
  kExact,
};
// "status", "exact" or "off"; "true" and "false" read as the modes they were before there were
// two ("exact", "off"). nullopt for anything else.
std::optional<LeakMode> ParseLeakMode(std::string_view text);

// How an Event leaves the scanner (ShmAgent posts it to its API queue).
using RecordEvent =
    std::function<void(const AgentPod& pod, const std::string& subject, AgentEvent event, const std::string& message)>;

class LeakScanner : public Collector {
 public:
  LeakScanner(LeakMode mode, LeakFinder finder, std::string kubelet_dir, const Policy& policy, PodTable& table,
              RecordEvent record)
      : mode_(mode),
        finder_(std::move(finder)),
        kubelet_dir_(std::move(kubelet_dir)),
        policy_(policy),
        table_(table),
        record_(std::move(record)) {}

  // Scans the pods whose containers restarted: when the restarts or whether a container runs
  // change, then every second while none runs (a back-off: when they may be deleted) and every
  // 30 s while one does. Records ShmLeaked once per restart that left some, and (exact mode)
  // deletes them where the policy or the pod allows and no container runs (ShmLeakReclaimed); in
  // the status mode a pod that asks is told why not (ShmLeakNotReclaimed).
  void Scan(Clock::time_point now);

  // The scans, those that could not read what a pod holds, and what was deleted.
  void Collect(std::ostream& out) const override;

 private:
  // A pod due for a scan: a summary (namespace, name, uid, run), its volumes, and whether its
  // leaked files may be deleted.
  struct Due {
    AgentPod pod;
    std::vector<std::string> volumes;
    bool reclaim = false;
  };
  std::vector<Due> DueNow(Clock::time_point now);
  // `processes`: the pod's, in the exact mode; nullptr in the status mode.
  void ScanPod(const Due& d, const PodProcesses* processes);
  // What is leaked in `volume` of `d`, after deleting it when `d` allows and `idle`.
  LeakedSegments ScanVolume(const Due& d, const std::string& volume, const std::set<FileId>& held, bool idle);

  LeakMode mode_;
  LeakFinder finder_;
  std::string kubelet_dir_;
  const Policy& policy_;
  PodTable& table_;
  RecordEvent record_;
  std::atomic<uint64_t> scans_{0}, scan_failures_{0}, reclaimed_bytes_{0}, reclaimed_files_{0}, reclaim_failures_{0};
};

}  // namespace shmguard::agent
