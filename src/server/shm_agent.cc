// ShmAgent: the node's pods, their /dev/shm sampled, gauges and ShmNearFull Events.
#include "server/shm_agent.h"

#include <sys/statfs.h>

#include <cstdio>
#include <ctime>
#include <sstream>

#include "server/metrics.h"
#include "shmguard/quantity.h"

namespace shmguard::server {
namespace {

constexpr long kTmpfsMagic = 0x01021994;  // linux/magic.h TMPFS_MAGIC

std::string Str(const nlohmann::json& j, const char* a, const char* b) {
  if (!j.is_object() || !j.contains(a) || !j[a].is_object()) return "";
  const auto& o = j[a];
  auto it = o.find(b);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Now() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Bytes in use are rarely a round quantity ("110672Ki"): MiB with one decimal reads better.
std::string Bytes(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  return buf;
}

}  // namespace

std::optional<FsUse> StatFsPath(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return std::nullopt;
  FsUse u;
  u.size = static_cast<uint64_t>(st.f_blocks) * static_cast<uint64_t>(st.f_bsize);
  u.used = static_cast<uint64_t>(st.f_blocks - st.f_bfree) * static_cast<uint64_t>(st.f_bsize);
  u.tmpfs = st.f_type == kTmpfsMagic;
  return u;
}

ShmAgent::ShmAgent(AgentOptions options, std::shared_ptr<KubeClient> client, StatFs statfs)
    : options_(std::move(options)), client_(std::move(client)), statfs_(std::move(statfs)) {
  metrics_http_ =
      std::make_unique<HttpsServer>(MetricsPortOptions(options_.bind_address, options_.metrics_port), nullptr,
                                    [this](const HttpRequest& req, HttpResponse& res) { HandleMetricsPort(req, res); });
}

ShmAgent::~ShmAgent() { Stop(); }

Result<bool> ShmAgent::Start() {
  auto port = metrics_http_->Listen();
  if (!port) return port.error();
  metrics_port_ = *port;
  metrics_http_->Start();
  if (client_) {
    // Only this node's pods: the API server filters them (spec.nodeName is a pod field
    // selector).
    std::string path = "/api/v1/pods?fieldSelector=spec.nodeName%3D" + options_.node_name;
    watcher_ = std::thread([this, path] {
      client_->ListWatch(
          path, [this](const nlohmann::json& items) { SetPods(items); },
          [this](const std::string& type, const nlohmann::json& pod) { UpdatePod(type, pod); }, stop_);
    });
  }
  sampler_ = std::thread([this] {
    auto next = std::chrono::steady_clock::now();
    while (!stop_) {
      SampleOnce();
      next += options_.interval;
      while (!stop_ && std::chrono::steady_clock::now() < next) {
        std::this_thread::sleep_for(
            std::min<std::chrono::milliseconds>(options_.interval, std::chrono::milliseconds(50)));
      }
    }
  });
  return true;
}

void ShmAgent::Stop() {
  if (stop_.exchange(true)) return;
  if (sampler_.joinable()) sampler_.join();
  // A watch waits on its connection (a bookmark or the watch's end); it ends with the process.
  if (watcher_.joinable()) watcher_.detach();
  metrics_http_->Stop();
}

std::pair<uint64_t, uint64_t> ShmAgent::Pod::Peak() const {
  std::pair<uint64_t, uint64_t> out{0, 0};
  for (const auto& [volume, w] : volumes) {
    if (w.peak() > out.first) out = {w.peak(), w.size()};
  }
  return out;
}

ShmAgent::Pod ShmAgent::Pod::Summary() const {
  Pod copy = *this;
  copy.object = nullptr;
  return copy;
}

void ShmAgent::Upsert(const nlohmann::json& pod, std::map<std::string, Pod>& into, std::map<std::string, Pod>& from) {
  std::string uid = Str(pod, "metadata", "uid");
  if (uid.empty()) return;
  auto volumes = FindShmVolumes(pod);
  Pod p;
  std::map<std::string, ShmWatch> seen;  // what was sampled of its volumes so far
  auto old = from.find(uid);
  if (old != from.end()) {
    p = std::move(old->second);
    seen.swap(p.volumes);
  } else {
    p.uid = uid;
    p.namespace_ = Str(pod, "metadata", "namespace");
    p.name = Str(pod, "metadata", "name");
    p.candidates = WorkloadCandidates(pod);
    p.workload = p.candidates.empty() ? "Pod/" + p.name : p.candidates.front();
  }
  if (!volumes.empty()) {
    // What GrowthTarget reads — the spec — as a Pod (a list's items carry no kind); not the
    // managedFields and status, which are most of a pod's bytes.
    p.object = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", p.name}, {"namespace", p.namespace_}}},
                {"spec", pod.contains("spec") ? pod["spec"] : nlohmann::json::object()}};
  }
  for (const auto& v : volumes) {
    auto it = seen.find(v.name);
    p.volumes.emplace(v.name, it != seen.end() ? it->second : ShmWatch(options_.threshold));
  }
  // A resize the kubelet refuses leaves its reason on the pod (KEP-1287's PodResizePending).
  for (auto& [volume, g] : p.growth) {
    if (g.settled) continue;
    for (const auto& c : pod.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array())) {
      if (!c.is_object() || c.value("type", "") != "PodResizePending" || c.value("reason", "") != "Infeasible")
        continue;
      g.settled = true;
      outcomes_.push_back({p.Summary(), volume, c.value("message", ""), Outcome::kInfeasible, g});
    }
  }
  const std::string phase = Str(pod, "status", "phase");
  const bool done = phase == "Succeeded" || phase == "Failed";
  if (old != from.end() && &into != &from) from.erase(old);
  if (done) EndRun(p);
  into[uid] = std::move(p);
}

void ShmAgent::EndRun(Pod& pod) {
  if (pod.ended) return;
  bool sampled = false;
  for (const auto& [name, w] : pod.volumes) sampled = sampled || w.size() > 0;
  if (!sampled) return;
  pod.ended = true;
  runs_.push_back(pod.Summary());
}

void ShmAgent::SetPods(const nlohmann::json& items) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, Pod> next;
  if (items.is_array()) {
    for (const auto& pod : items) Upsert(pod, next, pods_);
  }
  for (auto& [uid, gone] : pods_) EndRun(gone);  // deleted while the watch was down
  pods_ = std::move(next);
  synced_ = true;
}

void ShmAgent::UpdatePod(const std::string& type, const nlohmann::json& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  if (type == "DELETED") {
    auto it = pods_.find(Str(pod, "metadata", "uid"));
    if (it == pods_.end()) return;
    EndRun(it->second);
    pods_.erase(it);
  } else if (type == "ADDED" || type == "MODIFIED") {
    Upsert(pod, pods_, pods_);
  }
}

std::vector<VolumeUse> ShmAgent::SampleOnce() {
  struct Crossed {
    Pod pod;
    std::string volume;
    ShmWatch watch;
  };
  std::vector<Crossed> crossed;
  std::vector<Pod> peaks, runs;  // to write: a higher peak, a run
  std::vector<GrowthOutcome> outcomes;
  std::vector<VolumeUse> out;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [uid, pod] : pods_) {
      bool pod_crossed = false;
      for (auto& [name, watch] : pod.volumes) {
        // The kubelet mounts each memory emptyDir as a tmpfs here (pkg/volume/emptydir).
        auto use = statfs_(options_.kubelet_dir + "/pods/" + uid + "/volumes/kubernetes.io~empty-dir/" + name);
        if (!use || !use->tmpfs) continue;  // not mounted yet, or already gone
        const bool now_crossed = watch.Observe(use->used, use->size);
        if (auto g = pod.growth.find(name); g != pod.growth.end() && !g->second.settled) {
          if (static_cast<int64_t>(use->size) >= g->second.to) {
            g->second.settled = true;
            outcomes.push_back({pod, name, "", Outcome::kGrown, g->second});
          } else if (now - g->second.requested > options_.resize_timeout) {
            g->second.settled = true;
            outcomes.push_back({pod, name, "", Outcome::kTimedOut, g->second});
          }
        }
        if (now_crossed) {
          pod_crossed = true;
          crossed.push_back({pod, name, watch});
          out.push_back({pod.namespace_, pod.name, name, pod.workload, watch.used(), watch.size(), watch.peak()});
        }
      }
      const uint64_t peak = pod.Peak().first;
      if (peak > 0 && pod.recorded_at == std::chrono::steady_clock::time_point{}) pod.recorded_at = now;
      if (peak > pod.recorded_peak && (pod_crossed || now - pod.recorded_at >= options_.record_interval)) {
        pod.recorded_peak = peak;
        pod.recorded_at = now;
        peaks.push_back(pod.Summary());
      }
    }
    runs.swap(runs_);
    outcomes.insert(outcomes.end(), std::make_move_iterator(outcomes_.begin()),
                    std::make_move_iterator(outcomes_.end()));
    outcomes_.clear();
  }
  ++samples_;
  for (const auto& c : crossed) {
    RecordNearFull(c.pod, c.volume, c.watch);
    Grow(c.pod, c.volume, c.watch);
  }
  for (const auto& o : outcomes) Settle(o);
  if (client_ && options_.record_profiles) {
    for (const auto& p : peaks) RecordProfile(p, false);
    for (const auto& r : runs) {
      if (RecordProfile(r, true)) runs_recorded_++;
    }
  }
  return out;
}

std::string ShmAgent::ResolveWorkload(const Pod& pod) {
  if (pod.candidates.size() < 2 || pod.candidates.back().rfind("Job/", 0) != 0 || !client_) return pod.workload;
  // A Job's pod: the Job's own controller (a CronJob, a JobSet) is the workload; the pod's name
  // and labels only suggest it.
  const std::string job = pod.candidates.back().substr(4);
  const std::string key = pod.namespace_ + "/" + job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = job_owner_.find(key); it != job_owner_.end()) return it->second;
  }
  auto res = client_->Request("GET", "/apis/batch/v1/namespaces/" + pod.namespace_ + "/jobs/" + job);
  if (!res || (!res->ok() && res->status != 404)) return pod.workload;  // unknown for now: asked again later
  std::string workload = pod.candidates.back();
  if (res->ok() && res->body.is_object()) {
    for (const auto& o :
         res->body.value("metadata", nlohmann::json::object()).value("ownerReferences", nlohmann::json::array())) {
      if (o.is_object() && o.value("controller", false) && o.value("kind", "") != "" && o.value("name", "") != "") {
        workload = o.value("kind", "") + "/" + o.value("name", "");
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  job_owner_[key] = workload;
  return workload;
}

bool ShmAgent::RecordProfile(const Pod& pod, bool run) {
  const auto [peak, size] = pod.Peak();
  if (!client_ || peak == 0) return false;
  const std::string workload = ResolveWorkload(pod);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pods_.find(pod.uid); it != pods_.end()) it->second.workload = workload;
  }
  const std::string collection = "/apis/shmguard.io/v1alpha1/namespaces/" + pod.namespace_ + "/shmprofiles";
  const std::string path = collection + "/" + ProfileName(workload);
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto got = client_->Request("GET", path);
    if (!got || (!got->ok() && got->status != 404)) break;
    ObservedShm o{pod.namespace_, workload, 0, 0, 0, "", ""};
    std::string version;
    if (got->ok()) {
      auto read = ReadShmProfile(got->body);
      if (read && read->workload == workload) o = *read;
      o.namespace_name = pod.namespace_;
      version = Str(got->body, "metadata", "resourceVersion");
    }
    if (!run && static_cast<int64_t>(peak) <= o.peak_bytes) return true;  // nothing new to say
    if (static_cast<int64_t>(peak) > o.peak_bytes) {
      o.peak_bytes = static_cast<int64_t>(peak);
      o.size_bytes = static_cast<int64_t>(size);
    }
    if (run) o.runs++;
    o.last_observed = Now();
    o.last_pod = pod.name;
    auto put = version.empty() ? client_->Request("POST", collection, ShmProfileJson(o))
                               : client_->Request("PUT", path, ShmProfileJson(o, version));
    if (put && put->ok()) {
      profile_writes_++;
      return true;
    }
    if (!put || (put->status != 409)) break;  // 409: written by another agent in between, or created
  }
  profile_failures_++;
  return false;
}

bool ShmAgent::GrowthEnabled(const std::string& namespace_name) {
  if (MatchNamespace(options_.policy, namespace_name).grow_in_place) return true;
  if (!client_) return false;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = namespace_growth_.find(namespace_name);
    if (it != namespace_growth_.end() && now - it->second.read < std::chrono::seconds(30)) return it->second.on;
  }
  auto res = client_->Request("GET", "/api/v1/namespaces/" + namespace_name);
  bool on = res && res->ok() && res->body.is_object() &&
            res->body.value("metadata", nlohmann::json::object())
                    .value("labels", nlohmann::json::object())
                    .value("shmguard.io/grow-in-place", "") == "true";
  std::lock_guard<std::mutex> lock(mu_);
  namespace_growth_[namespace_name] = {on, now};
  return on;
}

namespace {

const char* RefusalText(GrowthRefusal r) {
  switch (r) {
    case GrowthRefusal::kNoSizeLimit:
      return "the volume has no sizeLimit (it already is the memory limit, and a resize may not add one)";
    case GrowthRefusal::kNoMemoryLimit: return "the pod has no memory limit to grow within";
    case GrowthRefusal::kNoRoom: return "its sizeLimit is already at maxFractionOfMemoryLimit of the memory limit";
    case GrowthRefusal::kUnreadable: return "the pod's spec could not be read";
    case GrowthRefusal::kNone: break;
  }
  return "";
}

}  // namespace

void ShmAgent::Grow(const Pod& pod, const std::string& volume, const ShmWatch& w) {
  if (!client_ || pod.growth.count(volume) || !GrowthEnabled(pod.namespace_)) return;
  GrowthState state;
  state.requested = std::chrono::steady_clock::now();
  state.settled = true;  // unless the API server takes it
  Growth g = GrowthTarget(pod.object, volume, options_.policy);
  auto remember = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pods_.find(pod.uid); it != pods_.end()) it->second.growth[volume] = state;
  };
  const std::string refused = "ShmGrowthRefused";
  if (g.refusal != GrowthRefusal::kNone) {
    remember();
    resizes_refused_++;
    RecordEvent(pod, volume, refused, "Warning",
                std::string("/dev/shm (volume ") + volume + ") is not grown in place: " + RefusalText(g.refusal) +
                    ". Its peak " + Bytes(w.peak()) + " is recorded for the workload's next pods.");
    return;
  }
  state.from = g.from_bytes;
  state.to = g.to_bytes;
  auto res = client_->Request("PATCH", "/api/v1/namespaces/" + pod.namespace_ + "/pods/" + pod.name + "/resize",
                              ResizeVolumePatch(volume, g.to_bytes), "application/strategic-merge-patch+json");
  resizes_requested_++;
  std::string why;
  if (!res) {
    why = "the resize could not be sent: " + res.error().message;
  } else if (!res->ok()) {
    why = "the API server refused the resize: " + res->Message();
  } else if (GrowthTarget(res->body, volume, options_.policy).from_bytes != g.to_bytes) {  // the pod it returned
    // Without InPlacePodVerticalScalingMemoryBackedVolumes the API server drops volume changes
    // from a resize and answers 200 (podResizeStrategy).
    why = "the API server kept the old sizeLimit: InPlacePodVerticalScalingMemoryBackedVolumes is off there";
  }
  if (!why.empty()) {
    remember();
    resizes_rejected_++;
    RecordEvent(pod, volume, refused, "Warning",
                "/dev/shm (volume " + volume + ") is not grown in place from " + FormatBytes(g.from_bytes) + " to " +
                    FormatBytes(g.to_bytes) + ": " + why + ". Its peak " + Bytes(w.peak()) +
                    " is recorded for the workload's next pods.");
    return;
  }
  state.settled = false;
  remember();
}

void ShmAgent::Settle(const GrowthOutcome& o) {
  const std::string sizes = FormatBytes(o.state.from) + " to " + FormatBytes(o.state.to);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - o.state.requested)
          .count();
  switch (o.outcome) {
    case Outcome::kGrown:
      resizes_grown_++;
      RecordEvent(o.pod, o.volume, "ShmGrown", "Normal",
                  "/dev/shm (volume " + o.volume + ") grown in place from " + sizes + " in " + std::to_string(ms) +
                      " ms (resize subresource).");
      return;
    case Outcome::kTimedOut:
      resizes_timed_out_++;
      RecordEvent(o.pod, o.volume, "ShmGrowthRefused", "Warning",
                  "/dev/shm (volume " + o.volume + ") was not grown from " + sizes + " within " +
                      std::to_string(ms / 1000) + " s. The peak is recorded for the workload's next pods.");
      return;
    case Outcome::kInfeasible: break;
  }
  resizes_refused_++;
  // Put the spec back, so that it says what the pod has; the kubelet then drops the pending
  // resize. Not retried: the next pods of the workload get the recorded peak instead.
  if (client_) {
    client_->Request("PATCH", "/api/v1/namespaces/" + o.pod.namespace_ + "/pods/" + o.pod.name + "/resize",
                     ResizeVolumePatch(o.volume, o.state.from), "application/strategic-merge-patch+json");
  }
  RecordEvent(o.pod, o.volume, "ShmGrowthRefused", "Warning",
              "the kubelet refused to grow /dev/shm (volume " + o.volume + ") from " + sizes + " (read " +
                  std::to_string(ms) + " ms after the resize): " + o.message +
                  ". The sizeLimit is put back; the peak is recorded for the workload's next pods.");
  if (options_.record_profiles) RecordProfile(o.pod, false);
}

void ShmAgent::RecordNearFull(const Pod& pod, const std::string& volume, const ShmWatch& w) {
  const int percent = static_cast<int>(100.0 * static_cast<double>(w.used()) / static_cast<double>(w.size()));
  std::ostringstream message;
  message << "/dev/shm (volume " << volume << ") is " << percent << "% full: " << Bytes(w.used()) << " of "
          << Bytes(w.size()) << " used, peak " << Bytes(w.peak()) << ". A DataLoader worker that needs more dies "
          << "with a Bus error: raise the size (shmguard.io/batch-bytes, num-workers, prefetch-factor).";
  RecordEvent(pod, volume, "ShmNearFull", "Warning", message.str());
}

void ShmAgent::RecordEvent(const Pod& pod, const std::string& volume, const std::string& reason,
                           const std::string& type, const std::string& message) {
  if (!client_) return;
  const std::string now = Now();
  const std::string key = reason + "/" + volume;
  EventRecord known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pods_.find(pod.uid); it != pods_.end()) {
      if (auto e = it->second.events.find(key); e != it->second.events.end()) known = e->second;
    }
  }
  Result<KubeResponse> res = MakeError(Code::kInternal, "not sent");
  EventRecord record;
  if (!known.name.empty()) {
    // A repeat: the same Event, counted (a JSON merge patch, RFC 7386).
    record = known;
    record.count++;
    nlohmann::json patch = {{"count", record.count}, {"lastTimestamp", now}, {"message", message}};
    res = client_->Request("PATCH", "/api/v1/namespaces/" + pod.namespace_ + "/events/" + record.name, patch.dump(),
                           "application/merge-patch+json");
  } else {
    nlohmann::json event = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"generateName", pod.name + ".shm-"}, {"namespace", pod.namespace_}}},
        {"involvedObject",
         {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod.name}, {"namespace", pod.namespace_}, {"uid", pod.uid}}},
        {"reason", reason},
        {"message", message},
        {"type", type},
        {"source", {{"component", "shmguard-agent"}, {"host", options_.node_name}}},
        {"reportingComponent", "shmguard.io/agent"},
        {"reportingInstance", options_.node_name},
        {"firstTimestamp", now},
        {"lastTimestamp", now},
        {"count", 1},
    };
    res = client_->Request("POST", "/api/v1/namespaces/" + pod.namespace_ + "/events", event.dump());
    if (res && res->ok()) record = {Str(res->body, "metadata", "name"), 1};
  }
  if (!res || !res->ok()) {
    event_failures_++;
    return;
  }
  events_++;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = pods_.find(pod.uid); it != pods_.end()) it->second.events[key] = record;
}

std::vector<VolumeUse> ShmAgent::Uses() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<VolumeUse> out;
  for (const auto& [uid, pod] : pods_) {
    for (const auto& [name, w] : pod.volumes) {
      if (w.size() == 0) continue;  // never sampled
      out.push_back({pod.namespace_, pod.name, name, pod.workload, w.used(), w.size(), w.peak()});
    }
  }
  return out;
}

std::string ShmAgent::RenderMetrics() const {
  std::ostringstream out;
  auto uses = Uses();
  struct Gauge {
    const char* name;
    const char* help;
    uint64_t VolumeUse::*value;
  };
  const Gauge gauges[] = {
      {"shmguard_pod_shm_used_bytes", "Bytes in use in a pod's memory-backed /dev/shm volume (statfs).",
       &VolumeUse::used},
      {"shmguard_pod_shm_size_bytes", "Size of a pod's memory-backed /dev/shm volume (its tmpfs).", &VolumeUse::size},
      {"shmguard_pod_shm_peak_bytes", "Largest use seen of a pod's /dev/shm volume since the agent found it.",
       &VolumeUse::peak},
  };
  for (const auto& g : gauges) {
    PrometheusHeader(out, g.name, "gauge", g.help);
    for (const auto& u : uses) {
      out << g.name << "{namespace=\"" << PrometheusLabel(u.namespace_) << "\",pod=\"" << PrometheusLabel(u.pod)
          << "\",volume=\"" << PrometheusLabel(u.volume) << "\",workload=\"" << PrometheusLabel(u.workload) << "\"} "
          << u.*g.value << "\n";
    }
  }
  PrometheusHeader(out, "shmguard_agent_samples_total", "counter", "Rounds of samples of every watched volume.");
  out << "shmguard_agent_samples_total " << samples_.load() << "\n";
  PrometheusHeader(out, "shmguard_agent_events_total", "counter",
                   "ShmNearFull Events recorded or counted again, by result (ok, or failed when the API refused or "
                   "could not be reached).");
  out << "shmguard_agent_events_total{result=\"ok\"} " << events_.load() << "\n";
  out << "shmguard_agent_events_total{result=\"failed\"} " << event_failures_.load() << "\n";
  PrometheusHeader(out, "shmguard_agent_profile_writes_total", "counter",
                   "ShmProfile writes (a higher peak, or a run), by result.");
  out << "shmguard_agent_profile_writes_total{result=\"ok\"} " << profile_writes_.load() << "\n";
  out << "shmguard_agent_profile_writes_total{result=\"failed\"} " << profile_failures_.load() << "\n";
  PrometheusHeader(out, "shmguard_agent_runs_recorded_total", "counter",
                   "Pods whose end was recorded as a run of their workload.");
  out << "shmguard_agent_runs_recorded_total " << runs_recorded_.load() << "\n";
  PrometheusHeader(out, "shmguard_agent_resizes_total", "counter",
                   "Growth in place of a /dev/shm, by result: requested (the API server took it), grown (the "
                   "tmpfs was remounted larger), refused (by the kubelet, or nothing to grow within), rejected (by "
                   "the API server), timed_out.");
  const std::pair<const char*, const std::atomic<uint64_t>*> resizes[] = {{"requested", &resizes_requested_},
                                                                          {"grown", &resizes_grown_},
                                                                          {"refused", &resizes_refused_},
                                                                          {"rejected", &resizes_rejected_},
                                                                          {"timed_out", &resizes_timed_out_}};
  for (const auto& [result, n] : resizes) {
    out << "shmguard_agent_resizes_total{result=\"" << result << "\"} " << n->load() << "\n";
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    PrometheusHeader(out, "shmguard_agent_pods", "gauge", "Pods of this node the agent knows (from its watch).");
    out << "shmguard_agent_pods " << pods_.size() << "\n";
  }
  if (client_) {
    PrometheusHeader(out, "shmguard_agent_lists_total", "counter",
                     "Lists of the node's pods (the first and each relist).");
    out << "shmguard_agent_lists_total " << client_->lists() << "\n";
    PrometheusHeader(out, "shmguard_agent_watches_total", "counter",
                     "Watches of the node's pods opened (each resumes from the last resourceVersion seen).");
    out << "shmguard_agent_watches_total " << client_->watches() << "\n";
  }
  PrometheusHeader(out, "shmguard_build_info", "gauge", "Always 1; the version is a label.");
  out << "shmguard_build_info{version=\"" << PrometheusLabel(SHMGUARD_VERSION) << "\"} 1\n";
  return out.str();
}

void ShmAgent::HandleMetricsPort(const HttpRequest& req, HttpResponse& res) {
  std::string not_ready;
  if (req.path == "/readyz" && client_) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!synced_) not_ready = "the node's pods are not listed yet";
  }
  ServeMetricsPort(req, res, not_ready, [this] { return RenderMetrics(); });
}

}  // namespace shmguard::server
