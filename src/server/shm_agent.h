// ShmAgent: `shmguard agent`, one per node (a DaemonSet). It knows the pods of its node from a
// list+watch (KubeClient), finds each one's memory-backed volumes at /dev/shm (FindShmVolumes),
// statfs's their tmpfs under the kubelet's pod directory every interval, exports use, size and
// peak as Prometheus gauges, and records a ShmNearFull Warning Event on a pod whose /dev/shm
// crosses the threshold (ShmWatch): one Event per volume, its count raised on each later
// crossing. statfs on a tmpfs is exact and costs one system call; the kubelet's Summary API
// refreshes every 1–2 minutes, too slow to see a DataLoader's peak.
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
#include "shmguard/result.h"
#include "shmguard/shm_watch.h"

namespace shmguard::server {

struct AgentOptions {
  std::string node_name;                         // required: the pods of this node are watched
  std::string kubelet_dir = "/var/lib/kubelet";  // the kubelet's --root-dir, as the agent sees it
  std::chrono::milliseconds interval{1000};      // between samples. Default: 1 s
  double threshold = 0.9;                        // of a volume's size, for ShmNearFull. Default: 0.9
  std::string bind_address = "0.0.0.0";
  int metrics_port = 8080;  // plain HTTP: /metrics, /healthz, /readyz; 0 picks a free one
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
  struct Pod {
    std::string namespace_, name, uid, workload;
    std::map<std::string, ShmWatch> volumes;    // by volume name
    std::map<std::string, EventRecord> events;  // by volume name
  };
  void Upsert(const nlohmann::json& pod, std::map<std::string, Pod>& into, std::map<std::string, Pod>& from);
  void RecordEvent(const Pod& pod, const std::string& volume, const ShmWatch& w);
  void HandleMetricsPort(const HttpRequest& req, HttpResponse& res);

  AgentOptions options_;
  std::shared_ptr<KubeClient> client_;
  StatFs statfs_;
  mutable std::mutex mu_;
  std::map<std::string, Pod> pods_;  // by UID
  bool synced_ = false;              // a list has arrived
  std::atomic<uint64_t> samples_{0}, events_{0}, event_failures_{0};
  std::atomic<bool> stop_{false};
  std::unique_ptr<HttpsServer> metrics_http_;
  int metrics_port_ = 0;
  std::thread watcher_, sampler_;
};

}  // namespace shmguard::server
