// ShmAgent: the informer feeding the table, the sampler's thread and what each round does, the
// metrics port.
#include "agent/shm_agent.h"

#include <random>
#include <sstream>

#include "agent/agent_metrics.h"
#include "core/plan/shm_profile.h"
#include "http/prometheus_text.h"
#include "io/words/finding_text.h"
#include "io/words/version.h"

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
                      below_limit_.Update(pod);
                    },
                .on_update =
                    [this](const nlohmann::json&, const nlohmann::json& pod) {
                      table_.Upsert(pod);
                      unpatched_.Update(pod);
                      below_limit_.Update(pod);
                    },
                .on_delete =
                    [this](const nlohmann::json& pod) {
                      table_.Delete(pod);
                      unpatched_.Remove(pod);
                      below_limit_.Remove(pod);
                    },
                .on_synced = nullptr,
                .on_relisted = nullptr,
            }),
      events_(client_, options_.node_name, table_, options_.on_api_failure),
      profiles_(client_, table_, options_.on_api_failure),
      unpatched_(options_.policy),
      below_limit_(options_.policy),
      growth_(client_, options_.policy, table_, events_, profiles_, options_.record_profiles),
      devices_(options_.device_checkpoint),
      leaks_(options_.leaked_segments, LeakFinder(LeakFinderOptions{.proc_dir = options_.proc_dir}),
             options_.kubelet_dir, options_.policy, table_,
             [this](const AgentPod& pod, const std::string& subject, AgentEvent event, const std::string& message) {
               Record(pod, subject, event, message);
             }),
      volumes_(table_, options_.policy.observed.margin_ppm),
      api_traffic_(client_ ? &pods_.stats() : nullptr, client_.get()),
      collectors_{&volumes_,  &devices_, &api_,         &leaks_,     &events_,
                  &profiles_, &growth_,  &api_traffic_, &unpatched_, &below_limit_} {
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
  if (options_.leaked_segments != LeakMode::kOff) leaks_.Scan(Clock::now());
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
  TellLimitsBelowShm();
  return out;
}

void ShmAgent::Record(const AgentPod& pod, const std::string& subject, AgentEvent event, const std::string& message) {
  api_.Post([this, pod, subject, event, message] { events_.Record(pod, subject, event, message); });
}

void ShmAgent::TellUnpatched() {
  for (const UnpatchedPod& u : unpatched_.TakeNew()) {
    AgentPod pod;
    pod.namespace_ = u.namespace_;
    pod.name = u.name;
    pod.uid = u.uid;
    Record(pod, "/dev/shm", AgentEvent::kShmUnpatched,
           UnpatchedWords(u.value.current, u.value.required_bytes, u.value.policy_made));
  }
}

void ShmAgent::TellLimitsBelowShm() {
  for (const LimitBelowShmPod& p : below_limit_.TakeNew()) {
    AgentPod pod;
    pod.namespace_ = p.namespace_;
    pod.name = p.name;
    pod.uid = p.uid;
    Record(pod, "/dev/shm", AgentEvent::kShmMemoryLimitBelowShm, io::FindingText(p.value));
  }
}

void ShmAgent::CheckDeviceMounts() {
  if (devices_.path().empty()) return;
  devices_.Refresh(pods_.List());
  for (const DeviceShmUse& d : devices_.uses()) {
    if (!d.hidden || !hidden_told_.insert(d.uid + "/" + d.container).second) continue;
    AgentPod pod;
    pod.namespace_ = d.namespace_;
    pod.name = d.pod;
    pod.uid = d.uid;
    Record(pod, "container " + d.container, AgentEvent::kShmHidesDeviceMount,
           HidesDeviceMountWords(d.container, d.resource, d.host_path));
  }
}

void ShmAgent::RecordNearFull(const AgentPod& pod, const std::string& volume, const ShmWatch& w) {
  events_.Record(pod, volume, AgentEvent::kShmNearFull, NearFullWords(volume, w.used(), w.size(), w.peak()));
}

std::string ShmAgent::RenderMetrics() const {
  std::ostringstream out;
  WriteSample(out, "shmguard_agent_samples_total", "counter", "Rounds of samples of every watched volume.", samples_);
  WriteSample(out, "shmguard_agent_pods", "gauge", "Pods of this node the agent knows (from its informer).",
              table_.size());
  for (const Collector* part : collectors_) part->Collect(out);
  http::WriteBuildInfo(out, io::Version());
  return out.str();
}

void ShmAgent::HandleMetricsPort(const http::HttpRequest& req, http::HttpResponse& res) {
  const std::string not_ready =
      req.path == "/readyz" && client_ && !pods_.HasSynced() ? "the node's pods are not listed yet" : "";
  http::ServeMetricsPort(req, res, not_ready, [this] { return RenderMetrics(); });
}

}  // namespace shmguard::agent
