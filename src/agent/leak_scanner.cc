// LeakScanner: the agent's scans for leaked segments.
#include "agent/leak_scanner.h"

#include <set>

namespace shmguard::agent {

std::optional<LeakMode> ParseLeakMode(std::string_view text) {
  if (text == "status") return LeakMode::kStatus;
  if (text == "exact" || text == "true") return LeakMode::kExact;
  if (text == "off" || text == "false") return LeakMode::kOff;
  return std::nullopt;
}

std::vector<LeakScanner::Due> LeakScanner::DueNow(Clock::time_point now) {
  std::vector<Due> due;
  table_.With([&](std::map<std::string, AgentPod>& pods) {
    for (auto& [uid, p] : pods) {
      if (p.volumes.empty() || p.run.restarts == 0 || p.ended) continue;
      const auto every = p.run.running ? std::chrono::seconds(30) : std::chrono::seconds(1);
      const bool changed = p.run.restarts != p.leak_scanned_restarts || p.run.running != p.leak_scanned_running;
      if (!changed && now - p.leak_scanned_at < every) continue;
      p.leak_scanned_restarts = p.run.restarts;
      p.leak_scanned_running = p.run.running;
      p.leak_scanned_at = now;
      Due d{p.Summary(), {}, p.reclaim_annotated || MatchNamespace(policy_, p.namespace_).reclaim_leaked_segments};
      for (const auto& [name, w] : p.volumes) d.volumes.push_back(name);
      due.push_back(std::move(d));
    }
  });
  return due;
}

void LeakScanner::Scan(Clock::time_point now) {
  const std::vector<Due> due = DueNow(now);
  if (due.empty()) return;
  if (mode_ != LeakMode::kExact) {  // never reads /proc
    for (const Due& d : due) ScanPod(d, nullptr);
    return;
  }
  std::set<std::string> uids;
  for (const Due& d : due) uids.insert(d.pod.uid);
  const std::map<std::string, PodProcesses> processes = finder_.ProcessesOf(uids);  // one pass over /proc
  for (const Due& d : due) ScanPod(d, &processes.at(d.pod.uid));
}

LeakedSegments LeakScanner::ScanVolume(const Due& d, const std::string& volume, const std::set<FileId>& held,
                                       bool idle) {
  const std::string dir = VolumeDir(kubelet_dir_, d.pod.uid, volume);
  LeakedSegments leaked = mode_ == LeakMode::kExact ? FindLeaked(finder_.List(dir).entries, held)
                                                    : LeftBehind(finder_.List(dir).entries, d.pod.run);
  if (!d.reclaim || !idle || leaked.files.empty()) return leaked;  // idle is known in the exact mode only
  std::string error;
  const int64_t bytes = finder_.Reclaim(dir, leaked, held, error);
  if (!error.empty()) reclaim_failures_++;
  if (bytes > 0) {
    reclaimed_bytes_ += static_cast<uint64_t>(bytes);
    reclaimed_files_ += leaked.files.size();
    record_(d.pod, volume, AgentEvent::kShmLeakReclaimed,
            LeakReclaimedWords(volume, leaked.files.size(), bytes, error));
  } else if (!error.empty()) {
    record_(d.pod, volume, AgentEvent::kShmLeakNotReclaimed, LeakNotReclaimedWords(volume, error));
  }
  return FindLeaked(finder_.List(dir).entries, held);
}

void LeakScanner::ScanPod(const Due& d, const PodProcesses* procs) {
  scans_++;
  std::set<FileId> held;
  bool idle = false;  // known only from the processes
  if (procs) {
    std::string unreadable;
    held = finder_.HeldBy(procs->pids, unreadable);
    if (!unreadable.empty()) {  // what the pod holds is not known: nothing is called leaked
      scan_failures_++;
      return;
    }
    idle = NoContainerRuns(d.pod.run, procs->containers);
  }
  std::map<std::string, LeakedSegments> found;
  int64_t bytes = 0, files = 0;
  for (const std::string& volume : d.volumes) {
    LeakedSegments leaked = ScanVolume(d, volume, held, idle);
    bytes += leaked.bytes;
    files += static_cast<int64_t>(leaked.files.size());
    found[volume] = std::move(leaked);
  }
  bool tell = false;
  table_.With([&](std::map<std::string, AgentPod>& pods) {
    auto it = pods.find(d.pod.uid);
    if (it == pods.end()) return;
    it->second.leaks = found;
    if (bytes > 0 && it->second.leak_told_restarts != d.pod.run.restarts) {
      it->second.leak_told_restarts = d.pod.run.restarts;
      tell = true;
    }
  });
  if (!tell) return;
  record_(d.pod, found.begin()->first, AgentEvent::kShmLeaked, LeakedWords(files, bytes, d.pod.run.restarts));
  if (d.reclaim && mode_ != LeakMode::kExact) {
    record_(d.pod, found.begin()->first, AgentEvent::kShmLeakNotReclaimed, LeakNeedsExactWords(found.begin()->first));
  }
}

void LeakScanner::Collect(std::ostream& out) const {
  WriteSample(out, "shmguard_agent_leak_scans_total", "counter",
              "Scans of a restarted pod's /dev/shm and processes for leaked segments.", scans_);
  WriteSample(out, "shmguard_agent_leak_scan_failures_total", "counter",
              "Scans that could not read what a pod's processes hold (the agent lacks CAP_SYS_PTRACE or "
              "CAP_DAC_READ_SEARCH): nothing is then called leaked.",
              scan_failures_);
  WriteSample(out, "shmguard_agent_leaked_reclaimed_bytes_total", "counter",
              "Bytes of leaked segments the agent deleted (reclaimLeakedSegments, shmguard.io/reclaim-leaked).",
              reclaimed_bytes_);
  WriteSample(out, "shmguard_agent_leaked_reclaimed_files_total", "counter",
              "Leaked segments (files) the agent deleted.", reclaimed_files_);
  WriteSample(out, "shmguard_agent_leaked_reclaim_failures_total", "counter",
              "Volumes whose leaked segments the agent could not all delete (a read-only mount).", reclaim_failures_);
}

}  // namespace shmguard::agent
