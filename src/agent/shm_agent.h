// ShmAgent: `shmguard-agent`, one per node (a DaemonSet). It knows the pods of its node from an
// informer (kube/informer.h), samples each one's /dev/shm every interval (sampler.h), exports
// use, size and peak as Prometheus gauges (agent_metrics.h) on a port of its own, records a
// ShmNearFull Warning Event when a volume crosses the threshold (event_recorder.h), writes what
// pods used to their workloads' ShmProfiles (profile_recorder.h), and grows a /dev/shm in place
// where that is on (growth.h), and reads what device plugins mounted at its containers' /dev/shm
// (device_mounts.h). Start and Stop own every thread: Stop joins them all.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_metrics.h"
#include "agent/api_queue.h"
#include "agent/device_mounts.h"
#include "agent/event_recorder.h"
#include "agent/growth.h"
#include "agent/leak_scanner.h"
#include "agent/limit_below_shm.h"
#include "agent/pod_table.h"
#include "agent/profile_recorder.h"
#include "agent/sampler.h"
#include "agent/unpatched_pods.h"
#include "core/policy/policy.h"
#include "core/values/result.h"
#include "http/https_server.h"
#include "kube/informer.h"
#include "kube/kube_client.h"

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
  // The kubelet's device manager checkpoint, where device plugins' mounts at /dev/shm are read
  // (device_mounts.h); "" reads none. Default: "" (`shmguard-agent`: the kubelet directory's).
  std::string device_checkpoint;
  // How often the agent deletes the ShmProfiles not observed for the policy's
  // observed.retentionDays (ProfileRecorder::Sweep): first at a random time within it, so a
  // cluster's agents do not sweep together. 0: never. Default: 24 h.
  std::chrono::seconds profile_sweep_interval{86400};
  // How to look for leaked segments in the /dev/shm of pods whose containers restarted
  // (leak_scanner.h): from their status and the files' change times (kStatus, the default: no
  // privilege), or from their processes under `proc_dir` (kExact: the host's /proc, which takes
  // the host's PID namespace, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH), or not at all.
  LeakMode leaked_segments = LeakMode::kStatus;
  std::string proc_dir = "/proc";
  // Each Event and ShmProfile write the API refused or never answered (`shmguard-agent` logs
  // them); empty: none reported. Called from the agent's threads, so it must take its own lock.
  ApiFailureSink on_api_failure;
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
  std::vector<VolumeUse> Uses() const { return table_.Uses(options_.policy.observed.margin_ppm); }
  // The device plugins' mounts at the node's containers' /dev/shm, as of the last round.
  std::vector<DeviceShmUse> DeviceUses() const { return devices_.uses(); }
  // The Prometheus text of the metrics port.
  std::string RenderMetrics() const;

 private:
  void RecordNearFull(const AgentPod& pod, const std::string& volume, const ShmWatch& w);
  // An Event, recorded on the API queue's thread.
  void Record(const AgentPod& pod, const std::string& subject, AgentEvent event, const std::string& message);
  // The device mounts read again; a Warning Event on each pod whose volume hides one, once.
  void CheckDeviceMounts();
  // A ShmUnpatched Event on each pod found running with less /dev/shm than shmguard would give.
  void TellUnpatched();
  // A ShmMemoryLimitBelowShm Event on each pod found whose memory limit no longer holds its /dev/shm.
  void TellLimitsBelowShm();
  void HandleMetricsPort(const http::HttpRequest& req, http::HttpResponse& res);

  AgentOptions options_;
  std::shared_ptr<kube::KubeClient> client_;
  StatFs statfs_;
  PodTable table_;
  kube::Informer pods_;
  EventRecorder events_;
  ProfileRecorder profiles_;
  UnpatchedPods unpatched_;
  LimitBelowShmPods below_limit_;
  Grower growth_;
  DeviceMounts devices_;
  // Events, profile writes and resizes: off the sampler's thread (Start to Stop).
  ApiQueue api_;
  LeakScanner leaks_;
  VolumeGauges volumes_;
  ApiTraffic api_traffic_;
  // Every part with metrics, in the order the metrics port writes them.
  std::vector<const Collector*> collectors_;
  std::set<std::string> hidden_told_;  // "uid/container" whose hidden device mount has its Event
  std::atomic<uint64_t> samples_{0};
  std::atomic<bool> stop_{false};
  std::unique_ptr<http::HttpsServer> metrics_http_;
  int metrics_port_ = 0;
  std::thread sampler_, sweeper_;
};

}  // namespace shmguard::agent
