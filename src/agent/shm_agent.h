// ShmAgent: `shmguard agent`, one per node (a DaemonSet). It knows the pods of its node from an
// informer (kube/informer.h), samples each one's /dev/shm every interval (sampler.h), exports
// use, size and peak as Prometheus gauges (agent_metrics.h) on a port of its own, records a
// ShmNearFull Warning Event when a volume crosses the threshold (event_recorder.h), writes what
// pods used to their workloads' ShmProfiles (profile_recorder.h), and grows a /dev/shm in place
// where that is on (growth.h). Start and Stop own every thread: Stop joins them all.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/event_recorder.h"
#include "agent/growth.h"
#include "agent/pod_table.h"
#include "agent/profile_recorder.h"
#include "agent/sampler.h"
#include "http/https_server.h"
#include "kube/informer.h"
#include "kube/kube_client.h"
#include "shmguard/policy.h"
#include "shmguard/result.h"

namespace shmguard::agent {

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

class ShmAgent {
 public:
  // `client` may be null (tests): no informer, no Events; pods come from SetPods and UpdatePod.
  ShmAgent(AgentOptions options, std::shared_ptr<kube::KubeClient> client, StatFs statfs = StatFsPath);
  ~ShmAgent();  // Stop()

  // Listens on the metrics port, starts the informer and the sampler. Fails with kIo when the
  // port is taken.
  Result<bool> Start();
  // Stops the sampler and the informer (closing its watch) and joins them, then the port.
  void Stop();
  int metrics_port() const { return metrics_port_; }

  // The pods of the node (a list's items), replacing what was known, and a watch event
  // (ADDED, MODIFIED, DELETED): what the informer is fed, for tests without an API server.
  void SetPods(const nlohmann::json& items);
  void UpdatePod(const std::string& type, const nlohmann::json& pod);
  // One round of samples; returns the volumes that crossed the threshold in it (and records
  // their Events when there is a client).
  std::vector<VolumeUse> SampleOnce();
  std::vector<VolumeUse> Uses() const { return table_.Uses(); }
  // The Prometheus text of the metrics port.
  std::string RenderMetrics() const;

 private:
  void RecordNearFull(const AgentPod& pod, const std::string& volume, const ShmWatch& w);
  void HandleMetricsPort(const http::HttpRequest& req, http::HttpResponse& res);

  AgentOptions options_;
  std::shared_ptr<kube::KubeClient> client_;
  StatFs statfs_;
  PodTable table_;
  kube::Informer pods_;
  EventRecorder events_;
  ProfileRecorder profiles_;
  Grower growth_;
  std::atomic<uint64_t> samples_{0};
  std::atomic<bool> stop_{false};
  std::unique_ptr<http::HttpsServer> metrics_http_;
  int metrics_port_ = 0;
  std::thread sampler_;
};

}  // namespace shmguard::agent
