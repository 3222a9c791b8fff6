// ShmAgent: `shmguard agent`, one per node (a DaemonSet). It knows the pods of its node from a
// list+watch (KubeClient), finds each one's memory-backed volumes at /dev/shm (FindShmVolumes),
// statfs's their tmpfs under the kubelet's pod directory every interval, exports use, size and
// peak as Prometheus gauges, and records a ShmNearFull Warning Event on a pod whose /dev/shm
// crosses the threshold (ShmWatch): one Event per volume, its count raised on each later
// crossing. statfs on a tmpfs is exact and costs one system call; the kubelet's Summary API
// refreshes every 1–2 minutes, too slow to see a DataLoader's peak.
//
// What a pod used is recorded in its workload's ShmProfile (shm_profile.h), which the webhook
// sizes the workload's next pods from: the peak when the threshold is crossed and every
// record interval while it grows, and a run when the pod ends. Where growth in place is on (the
// namespace label shmguard.io/grow-in-place=true, or a policy rule's growInPlace), a crossing
// also asks the API server to raise the volume's sizeLimit through the pod's resize subresource,
// once per pod and volume; the agent then reads the outcome — the remounted size (ShmGrown), or
// the kubelet's refusal (PodResizePending, Infeasible: cgroup v1 nodes, the gate off), which it
// reports (ShmGrowthRefused) and undoes, leaving the recorded peak for the next run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/https_server.h"
#include "server/kube_client.h"
#include "shmguard/policy.h"
#include "shmguard/result.h"
#include "shmguard/shm_profile.h"
#include "shmguard/shm_watch.h"

namespace shmguard::server {

struct AgentOptions {
  std::string node_name;                         // required: the pods of this node are watched
  std::string kubelet_dir = "/var/lib/kubelet";  // the kubelet's --root-dir, as the agent sees it
  std::chrono::milliseconds interval{1000};      // between samples. Default: 1 s
  double threshold = 0.9;                        // of a volume's size, for ShmNearFull. Default: 0.9
  std::string bind_address = "0.0.0.0";
  int metrics_port = 8080;  // plain HTTP: /metrics, /healthz, /readyz; 0 picks a free one
  // Write what pods used to their workloads' ShmProfiles. Default: true.
  bool record_profiles = true;
  // While a pod's peak grows, it is written at most this often (and at each crossing and at
  // the pod's end). Default: 30 s.
  std::chrono::milliseconds record_interval{30000};
  // The policy (--config): namespace rules that turn growth in place on, and
  // maxFractionOfMemoryLimit, which bounds it. Default: the built-in policy.
  Policy policy;
  // A resize neither applied nor refused in this time is reported as not applied. Default: 120 s.
  std::chrono::milliseconds resize_timeout{120000};
};

// A volume's use, as the metrics show it.
struct VolumeUse {
  std::string namespace_, pod, volume, workload;
  uint64_t used = 0, size = 0, peak = 0;
};

// statfs of a path: used and total bytes of the file system there, and whether it is a tmpfs.
struct FsUse {
  uint64_t used = 0, size = 0;
  bool tmpfs = false;
};
using StatFs = std::function<std::optional<FsUse>(const std::string& path)>;
// The real one (statfs(2)); nullopt when the path is not there.
std::optional<FsUse> StatFsPath(const std::string& path);

class ShmAgent {
 public:
  // `client` may be null (tests): no watch and no Events; pods come from SetPods.
  ShmAgent(AgentOptions options, std::shared_ptr<KubeClient> client, StatFs statfs = StatFsPath);
  ~ShmAgent();  // Stop()

  // Listens on the metrics port, starts the watch and the sampler. Fails with kIo when the port
  // is taken.
  Result<bool> Start();
  void Stop();
  int metrics_port() const { return metrics_port_; }

  // The pods of the node (a list's items), replacing what was known; volumes of pods still
  // there keep their peaks.
  void SetPods(const nlohmann::json& items);
  // A watch event: ADDED, MODIFIED or DELETED.
  void UpdatePod(const std::string& type, const nlohmann::json& pod);
  // One round of samples; returns the volumes that crossed the threshold in it (and records
  // their Events when there is a client).
  std::vector<VolumeUse> SampleOnce();
  std::vector<VolumeUse> Uses() const;
  // The Prometheus text of the metrics port.
  std::string RenderMetrics() const;

 private:
  // The ShmNearFull Event of one volume: a later crossing counts on it (count, lastTimestamp,
  // message), as client-go's EventCorrelator folds repeats, instead of adding an Event.
  struct EventRecord {
    std::string name;
    int count = 0;
  };
  // A resize asked for one volume: once per pod and volume, whatever the outcome.
  struct GrowthState {
    int64_t from = 0, to = 0;
    std::chrono::steady_clock::time_point requested;
    bool settled = false;
  };
  struct Pod {
    std::string namespace_, name, uid, workload;
    std::vector<std::string> candidates;  // WorkloadCandidates (ResolveWorkload reads a Job's owner)
    nlohmann::json object;                // the pod's spec as last seen, for growth

    std::map<std::string, ShmWatch> volumes;    // by volume name
    std::map<std::string, EventRecord> events;  // by event reason and volume name
    std::map<std::string, GrowthState> growth;  // by volume name
    uint64_t recorded_peak = 0;                 // the peak last written to the profile
    std::chrono::steady_clock::time_point recorded_at{};
    bool ended = false;  // its run is recorded

    // The largest peak of its volumes, and the size of the volume it was reached in.
    std::pair<uint64_t, uint64_t> Peak() const;
    // A copy without `object`, for the work done outside the lock that does not grow it.
    Pod Summary() const;
  };
  // What the sampler does outside the lock.
  enum class Outcome { kGrown, kInfeasible, kTimedOut };
  struct GrowthOutcome {
    Pod pod;
    std::string volume, message;
    Outcome outcome;
    GrowthState state;
  };
  void Upsert(const nlohmann::json& pod, std::map<std::string, Pod>& into, std::map<std::string, Pod>& from);
  // Moves a pod that is gone or done to the runs to record (once).
  void EndRun(Pod& pod);
  // Warning or Normal Event `reason` on the pod about `volume`; a repeat counts on the first.
  void RecordEvent(const Pod& pod, const std::string& volume, const std::string& reason, const std::string& type,
                   const std::string& message);
  void RecordNearFull(const Pod& pod, const std::string& volume, const ShmWatch& w);
  // The workload a pod's use is kept under: the top owner, reading a Job's owner (a CronJob, a
  // JobSet) from the API; else WorkloadCandidates' first.
  std::string ResolveWorkload(const Pod& pod);
  // Writes the pod's peak (and a run, when `run`) to its workload's ShmProfile: read, raised,
  // written back with its resourceVersion, read again on a conflict. False when it could not be.
  bool RecordProfile(const Pod& pod, bool run);
  bool GrowthEnabled(const std::string& namespace_name);
  void Grow(const Pod& pod, const std::string& volume, const ShmWatch& w);
  void Settle(const GrowthOutcome& o);
  void HandleMetricsPort(const HttpRequest& req, HttpResponse& res);

  AgentOptions options_;
  std::shared_ptr<KubeClient> client_;
  StatFs statfs_;
  mutable std::mutex mu_;
  std::map<std::string, Pod> pods_;               // by UID
  bool synced_ = false;                           // a list has arrived
  std::vector<Pod> runs_;                         // ended pods whose run is to be recorded
  std::vector<GrowthOutcome> outcomes_;           // resizes the kubelet refused (from the watch)
  std::map<std::string, std::string> job_owner_;  // "namespace/job" -> the workload it belongs to
  struct NamespaceGrowth {
    bool on = false;
    std::chrono::steady_clock::time_point read;
  };
  std::map<std::string, NamespaceGrowth> namespace_growth_;
  std::atomic<uint64_t> samples_{0}, events_{0}, event_failures_{0};
  std::atomic<uint64_t> profile_writes_{0}, profile_failures_{0}, runs_recorded_{0};
  std::atomic<uint64_t> resizes_requested_{0}, resizes_grown_{0}, resizes_refused_{0}, resizes_rejected_{0},
      resizes_timed_out_{0};
  std::atomic<bool> stop_{false};
  std::unique_ptr<HttpsServer> metrics_http_;
  int metrics_port_ = 0;
  std::thread watcher_, sampler_;
};

}  // namespace shmguard::server
