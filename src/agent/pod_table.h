// PodTable: the node agent's discovery — the pods of its node that mount a memory volume at
// /dev/shm (FindShmVolumes, read through JsonNode), each with what the agent keeps of it: a
// ShmWatch per volume, the Events it recorded, the resizes it asked for, the peak it last wrote,
// and whether its run ended. Fed by the pod informer's handlers; read by the sampler, the
// recorders and the metrics, each under the table's lock for as long as it reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/node/leaked_segments.h"
#include "core/node/shm_watch.h"
#include "core/values/json_node.h"

namespace shmguard::agent {

using Clock = std::chrono::steady_clock;

// The Event recorded about one volume for one reason: a later crossing counts on it.
struct EventRecord {
  std::string name;
  int count = 0;
};

// A resize asked for one volume: once per pod and volume, whatever the outcome.
struct GrowthState {
  int64_t from = 0, to = 0;
  Clock::time_point requested;
  bool settled = false;
};

struct AgentPod {
  std::string namespace_, name, uid, workload;
  std::vector<std::string> candidates;        // WorkloadCandidates (a Job's owner is read from the API)
  nlohmann::json object;                      // the pod's spec as a Pod, for growth; null without volumes
  std::map<std::string, ShmWatch> volumes;    // by volume name
  std::map<std::string, EventRecord> events;  // by event reason and volume name
  std::map<std::string, GrowthState> growth;  // by volume name
  std::optional<int64_t> planned_bytes;       // its shmguard.io/plan's size (PlannedShmBytes)
  uint64_t recorded_peak = 0;                 // the peak last written to the profile
  Clock::time_point recorded_at{};
  bool ended = false;  // its run is recorded
  // Leaked segments: its containers' restarts and state (ReadPodRunState), its opt-in to their
  // deletion (shmguard.io/reclaim-leaked), what the last scan found by volume, and when.
  PodRunState run;
  bool reclaim_annotated = false;
  std::map<std::string, LeakedSegments> leaks;
  int64_t leak_scanned_restarts = -1;
  bool leak_scanned_running = false;
  Clock::time_point leak_scanned_at{};
  int64_t leak_told_restarts = 0;  // the restarts its ShmLeaked Event was recorded for

  // The largest peak of its volumes, and the size of the volume it was reached in.
  std::pair<uint64_t, uint64_t> Peak() const;
  // A copy without `object`, for the work done outside the lock.
  AgentPod Summary() const;
};

// A resize the kubelet refused, read off the pod (KEP-1287's PodResizePending, Infeasible).
struct RefusedResize {
  AgentPod pod;
  std::string volume, message;
  GrowthState state;
};

// A volume's use, as the metrics show it: what it uses and has, what shmguard planned for the pod
// (when it carries a plan), and what its peak teaches its workload's next pods (LearnedBytes:
// peak × observed.margin).
struct VolumeUse {
  std::string namespace_, pod, volume, workload;
  uint64_t used = 0, size = 0, peak = 0;
  std::optional<int64_t> planned;
  int64_t learned = 0;
  int64_t leaked = 0, leaked_files = 0;  // its leaked segments, as of the last scan
};

// A volume's use as the metrics show it, from its pod and its samples.
VolumeUse UseOf(const AgentPod& pod, const std::string& volume, const ShmWatch& w, int64_t margin_ppm);

// The directory of a pod's memory emptyDir on the node: the kubelet mounts each as a tmpfs there
// (pkg/volume/emptydir).
std::string VolumeDir(const std::string& kubelet_dir, const std::string& uid, const std::string& volume);

class PodTable {
 public:
  explicit PodTable(double threshold) : threshold_(threshold) {}

  // A pod added or changed: its volumes found again, keeping what was seen of those it still
  // has; a pod that succeeded or failed ends its run.
  void Upsert(JsonNode pod);
  // A pod deleted (or gone from a relist): its run ends.
  void Delete(JsonNode pod);

  // Runs `f` on the pods, by UID, under the lock.
  void With(const std::function<void(std::map<std::string, AgentPod>&)>& f);
  // The runs ended since the last call, and the kubelet's refusals read since then.
  std::vector<AgentPod> TakeRuns();
  std::vector<RefusedResize> TakeRefusals();
  // The volumes sampled at least once; `margin_ppm` is the policy's observed.margin.
  std::vector<VolumeUse> Uses(int64_t margin_ppm) const;
  size_t size() const;

 private:
  void EndRun(AgentPod& pod);

  double threshold_;
  mutable std::mutex mu_;
  std::map<std::string, AgentPod> pods_;
  std::vector<AgentPod> runs_;
  std::vector<RefusedResize> refusals_;
};

}  // namespace shmguard::agent
