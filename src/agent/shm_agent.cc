// ShmAgent: the informer feeding the table, the sampler's thread and what each round does, the
// metrics port.
#include "agent/shm_agent.h"

#include <random>
#include <sstream>

#include "agent/agent_metrics.h"
#include "shmguard/plan/shm_profile.h"

namespace shmguard::agent {

ShmAgent::ShmAgent(AgentOptions options, std::shared_ptr<kube::KubeClient> client, StatFs statfs)
    : options_(std::move(options)),
      client_(std::move(client)),
      statfs_(std::move(statfs)),
      table_(options_.threshold),
      // Only this node's pods: the API server filters them (spec.nodeName is a field selector).
      // Bounded for the agent's 64Mi memory limit (SECURITY.md): a node runs at most a few
      // hundred pods, a pod a few hundred JSON values.
      pods_(client_,
            kube::ReflectorOptions{
                .path = "/api/v1/pods?fieldSelector=" + kube::QueryValue("spec.nodeName=" + options_.node_name),
                .max_answer_bytes = size_t{8} << 20,
                .max_list_bytes = size_t{24} << 20,
                .max_list_items = 2'000,
                .max_values = 400'000},
            kube::InformerHandlers{
                .on_add =
                    [this](const nlohmann::json& pod) {
                      table_.Upsert(pod);
                      unpatched_.Update(pod);
                    },
                .on_update =
                    [this](const nlohmann::json&, const nlohmann::json& pod) {
                      table_.Upsert(pod);
                      unpatched_.Update(pod);
                    },
                .on_delete =
                    [this](const nlohmann::json& pod) {
                      table_.Delete(pod);
                      unpatched_.Remove(pod);
                    },
                .on_synced = nullptr,
                .on_relisted = nullptr,
            }),
      events_(client_, options_.node_name, table_),
      profiles_(client_, table_),
      unpatched_(options_.policy),
      growth_(client_, options_.policy, table_, events_, profiles_, options_.record_profiles),
      devices_(options_.device_checkpoint),
      leaks_(LeakFinderOptions{.proc_dir = options_.proc_dir}) {
  metrics_http_ = std::make_unique<http::HttpsServer>(
      http::MetricsPortOptions(options_.bind_address, options_.metrics_port), nullptr,
      [this](const http::HttpRequest& req, http::HttpResponse& res) { HandleMetricsPort(req, res); });
}

ShmAgent::~ShmAgent() { Stop(); }

Result<bool> ShmAgent::Start() {
  auto port = metrics_http_->Listen();
  if (!port) return port.error();
  metrics_port_ = *port;
  metrics_http_->Start();
  api_.Start();
  if (client_) pods_.Start();
  sampler_ = std::thread([this] {
    auto next = Clock::now();
    while (!stop_) {
      SampleOnce();
      next += options_.interval;
      while (!stop_ && Clock::now() < next) {
        std::this_thread::sleep_for(
            std::min<std::chrono::milliseconds>(options_.interval, std::chrono::milliseconds(50)));
      }
    }
  });
  if (client_ && options_.record_profiles && options_.profile_sweep_interval.count() > 0) {
    sweeper_ = std::thread([this] {
      // The first sweep at a random time within the interval, then one each interval.
      std::mt19937_64 rng{std::random_device{}()};
      const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(options_.profile_sweep_interval);
      auto next = Clock::now() + std::chrono::milliseconds(rng() % static_cast<uint64_t>(interval.count()));
      while (!stop_) {
        if (Clock::now() >= next) {
          const int64_t now =
              std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
          profiles_.Sweep(now, options_.policy.observed.retention_days);
          next += interval;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  return true;
}

void ShmAgent::Stop() {
  if (stop_.exchange(true)) return;
  if (sampler_.joinable()) sampler_.join();
  if (sweeper_.joinable()) sweeper_.join();
  api_.Stop();
  pods_.Stop();  // closes the watch's connection and joins its thread
  metrics_http_->Stop();
}

void ShmAgent::SetPods(const nlohmann::json& items) {
  std::vector<nlohmann::json> list;
  if (items.is_array()) list.assign(items.begin(), items.end());
  pods_.Replace(std::move(list));
}

void ShmAgent::UpdatePod(const std::string& type, const nlohmann::json& pod) { pods_.Apply(type, nlohmann::json(pod)); }

std::vector<VolumeUse> ShmAgent::SampleOnce() {
  // Leaked segments first, so that this round's samples leave them out of the peaks.
  ScanLeaks();
  const SamplerOptions sampling{options_.kubelet_dir, options_.record_interval, options_.resize_timeout};
  SampleRound round = Sample(table_, statfs_, sampling, Clock::now());
  samples_++;
  // What the round found, for the API server: written on the queue's thread, never this one.
  std::vector<VolumeUse> out;
  for (const auto& c : round.crossed) {
    out.push_back(UseOf(c.pod, c.volume, c.watch, options_.policy.observed.margin_ppm));
    api_.Post([this, c] {
      RecordNearFull(c.pod, c.volume, c.watch);
      growth_.Grow(c.pod, c.volume, c.watch);
    });
  }
  for (auto& o : round.resizes) api_.Post([this, o] { growth_.Settle(o); });
  for (auto& r : table_.TakeRefusals()) api_.Post([this, r] { growth_.Settle(r); });
  if (client_ && options_.record_profiles) {
    for (auto& p : round.peaks) api_.Post([this, p] { profiles_.Record(p, false); });
    for (auto& r : table_.TakeRuns()) api_.Post([this, r] { profiles_.Record(r, true); });
  }
  CheckDeviceMounts();
  TellUnpatched();
  return out;
}

void ShmAgent::ScanLeaks() {
  if (!options_.leaked_segments) return;
  const auto now = Clock::now();
  struct Due {
    AgentPod pod;  // a summary: namespace, name, uid, run
    std::vector<std::string> volumes;
    bool reclaim = false;
  };
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
      Due d{p.Summary(),
            {},
            p.reclaim_annotated || MatchNamespace(options_.policy, p.namespace_).reclaim_leaked_segments};
      for (const auto& [name, w] : p.volumes) d.volumes.push_back(name);
      due.push_back(std::move(d));
    }
  });
  if (due.empty()) return;
  std::set<std::string> uids;
  for (const Due& d : due) uids.insert(d.pod.uid);
  const std::map<std::string, PodProcesses> processes = leaks_.ProcessesOf(uids);  // one pass over /proc
  for (Due& d : due) {
    leak_scans_++;
    const PodProcesses& procs = processes.at(d.pod.uid);
    std::string unreadable;
    const std::set<FileId> held = leaks_.HeldBy(procs.pids, unreadable);
    if (!unreadable.empty()) {  // what the pod holds is not known: nothing is called leaked
      leak_scan_failures_++;
      continue;
    }
    const bool idle = NoContainerRuns(d.pod.run, procs.containers);
    std::map<std::string, LeakedSegments> found;
    for (const std::string& volume : d.volumes) {
      const std::string dir = VolumeDir(options_.kubelet_dir, d.pod.uid, volume);
      LeakedSegments leaked = FindLeaked(leaks_.List(dir).entries, held);
      if (d.reclaim && idle && !leaked.files.empty()) {
        std::string error;
        const int64_t bytes = leaks_.Reclaim(dir, leaked, held, error);
        if (!error.empty()) reclaim_failures_++;
        if (bytes > 0) {
          reclaimed_bytes_ += static_cast<uint64_t>(bytes);
          reclaimed_files_ += leaked.files.size();
          Record(d.pod, volume, "ShmLeakReclaimed", "Normal",
                 "Deleted " + std::to_string(leaked.files.size()) + " file(s), " + Mib(static_cast<uint64_t>(bytes)) +
                     ", from /dev/shm (volume " + volume +
                     ") that no process of the pod held while none of its containers ran (" +
                     std::string(kReclaimLeakedAnnotation) + " or the policy's reclaimLeakedSegments)" +
                     (error.empty() ? "." : "; not all: " + error + "."));
        } else if (!error.empty()) {
          Record(d.pod, volume, "ShmLeakNotReclaimed", "Warning",
                 "Could not delete the leaked files in /dev/shm (volume " + volume + "): " + error +
                     ". The agent needs the chart's agent.reclaimLeakedSegments (a writable kubelet pod "
                     "directory) to delete them.");
        }
        leaked = FindLeaked(leaks_.List(dir).entries, held);
      }
      found[volume] = std::move(leaked);
    }
    int64_t bytes = 0, files = 0;
    for (const auto& [volume, leaked] : found) {
      bytes += leaked.bytes;
      files += static_cast<int64_t>(leaked.files.size());
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
    if (!tell) continue;
    Record(d.pod, found.begin()->first, "ShmLeaked", "Warning",
           std::to_string(files) + " file(s), " + Mib(static_cast<uint64_t>(bytes)) +
               ", in /dev/shm are held by no process of the pod after " + std::to_string(d.pod.run.restarts) +
               " container restart(s): segments a process left when it ended. They count against the "
               "memory limit and stay until the pod is deleted (emptyDir keeps its files across container "
               "restarts). Let shmguard delete them while no container runs: annotate the pod " +
               std::string(kReclaimLeakedAnnotation) +
               ": \"true\" or set reclaimLeakedSegments in its "
               "namespace's rule.");
  }
}

void ShmAgent::Record(const AgentPod& pod, const std::string& subject, const std::string& reason,
                      const std::string& type, const std::string& message) {
  api_.Post([this, pod, subject, reason, type, message] { events_.Record(pod, subject, reason, type, message); });
}

void ShmAgent::TellUnpatched() {
  for (const UnpatchedPod& u : unpatched_.TakeNew()) {
    AgentPod pod;
    pod.namespace_ = u.namespace_;
    pod.name = u.name;
    pod.uid = u.uid;
    const std::string how = u.shm.policy_made
                                ? "an admission policy sized it (shmguard's webhook did not answer when it was created)"
                                : "shmguard's webhook did not patch it when it was created (it was down, slow, or not "
                                  "installed yet)";
    Record(pod, "/dev/shm", "ShmUnpatched", "Warning",
           "/dev/shm is " + u.shm.current + ", below the " + Mib(static_cast<uint64_t>(u.shm.required_bytes)) +
               " shmguard would give this pod: " + how +
               ". A DataLoader or server that needs more dies with a Bus error: recreate the pod to be sized.");
  }
}

void ShmAgent::CheckDeviceMounts() {
  if (devices_.path().empty()) return;
  if (!devices_.Refresh(pods_.List()).empty()) checkpoint_errors_++;
  for (const DeviceShmUse& d : devices_.uses()) {
    if (!d.hidden || !hidden_told_.insert(d.uid + "/" + d.container).second) continue;
    AgentPod pod;
    pod.namespace_ = d.namespace_;
    pod.name = d.pod;
    pod.uid = d.uid;
    Record(pod, "container " + d.container, "ShmHidesDeviceMount", "Warning",
           "A volume mounted at /dev/shm of container " + d.container + " hides what the device plugin for " +
               d.resource + " mounted there (" + d.host_path +
               " on the node: NVIDIA's plugin in MPS mode mounts the MPS daemon's tmpfs), so CUDA MPS "
               "clients in it cannot reach the daemon. Add " +
               d.resource + " to the shmguard policy's mpsResources: its pods then get no dshm.");
  }
}

void ShmAgent::RecordNearFull(const AgentPod& pod, const std::string& volume, const ShmWatch& w) {
  const int percent = static_cast<int>(100.0 * static_cast<double>(w.used()) / static_cast<double>(w.size()));
  std::ostringstream message;
  message << "/dev/shm (volume " << volume << ") is " << percent << "% full: " << Mib(w.used()) << " of "
          << Mib(w.size()) << " used, peak " << Mib(w.peak()) << ". A DataLoader worker that needs more dies "
          << "with a Bus error: raise the size (shmguard.io/batch-bytes, num-workers, prefetch-factor).";
  events_.Record(pod, volume, "ShmNearFull", "Warning", message.str());
}

std::string ShmAgent::RenderMetrics() const {
  AgentCounters c;
  c.samples = samples_;
  c.pods = table_.size();
  c.events_ok = events_.ok();
  c.events_failed = events_.failed();
  c.profile_writes = profiles_.writes();
  c.profile_failures = profiles_.failures();
  c.runs = profiles_.runs();
  c.profiles_deleted = profiles_.deleted();
  c.growth = &growth_.counts();
  if (client_) {
    c.informer = &pods_.stats();
    c.api_requests = client_->requests();
    c.api_connections = client_->connections();
  }
  c.checkpoint_errors = checkpoint_errors_;
  c.api_queue_depth = api_.depth();
  c.api_queue_dropped = api_.dropped();
  c.leak_scans = leak_scans_;
  c.leak_scan_failures = leak_scan_failures_;
  c.reclaimed_bytes = reclaimed_bytes_;
  c.reclaimed_files = reclaimed_files_;
  c.reclaim_failures = reclaim_failures_;
  std::ostringstream unpatched;
  unpatched_.Render(unpatched);
  return RenderAgentMetrics(Uses(), DeviceUses(), c) + unpatched.str();
}

void ShmAgent::HandleMetricsPort(const http::HttpRequest& req, http::HttpResponse& res) {
  const std::string not_ready =
      req.path == "/readyz" && client_ && !pods_.HasSynced() ? "the node's pods are not listed yet" : "";
  http::ServeMetricsPort(req, res, not_ready, [this] { return RenderMetrics(); });
}

}  // namespace shmguard::agent
