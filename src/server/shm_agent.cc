// ShmAgent: the node's pods, their /dev/shm sampled, gauges and ShmNearFull Events.
#include "server/shm_agent.h"

#include <sys/statfs.h>

#include <cstdio>
#include <ctime>
#include <sstream>

#include "server/metrics.h"

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

void ShmAgent::Upsert(const nlohmann::json& pod, std::map<std::string, Pod>& into, std::map<std::string, Pod>& from) {
  std::string uid = Str(pod, "metadata", "uid");
  if (uid.empty()) return;
  auto volumes = FindShmVolumes(pod);
  Pod p;
  p.uid = uid;
  p.namespace_ = Str(pod, "metadata", "namespace");
  p.name = Str(pod, "metadata", "name");
  p.workload = WorkloadOf(pod);
  auto old = from.find(uid);
  if (old != from.end()) p.events = old->second.events;
  for (const auto& v : volumes) {
    ShmWatch w(options_.threshold);
    if (old != from.end()) {
      if (auto it = old->second.volumes.find(v.name); it != old->second.volumes.end()) w = it->second;
    }
    p.volumes.emplace(v.name, w);
  }
  into[uid] = std::move(p);
}

void ShmAgent::SetPods(const nlohmann::json& items) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, Pod> next;
  if (items.is_array()) {
    for (const auto& pod : items) Upsert(pod, next, pods_);
  }
  pods_ = std::move(next);
  synced_ = true;
}

void ShmAgent::UpdatePod(const std::string& type, const nlohmann::json& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  if (type == "DELETED") {
    pods_.erase(Str(pod, "metadata", "uid"));
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
  std::vector<VolumeUse> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [uid, pod] : pods_) {
      for (auto& [name, watch] : pod.volumes) {
        // The kubelet mounts each memory emptyDir as a tmpfs here (pkg/volume/emptydir).
        auto use = statfs_(options_.kubelet_dir + "/pods/" + uid + "/volumes/kubernetes.io~empty-dir/" + name);
        if (!use || !use->tmpfs) continue;  // not mounted yet, or already gone
        if (watch.Observe(use->used, use->size)) {
          Pod copy{pod.namespace_, pod.name, pod.uid, pod.workload, {}, pod.events};
          crossed.push_back({std::move(copy), name, watch});
          out.push_back({pod.namespace_, pod.name, name, pod.workload, watch.used(), watch.size(), watch.peak()});
        }
      }
    }
  }
  ++samples_;
  for (const auto& c : crossed) RecordEvent(c.pod, c.volume, c.watch);
  return out;
}

void ShmAgent::RecordEvent(const Pod& pod, const std::string& volume, const ShmWatch& w) {
  if (!client_) return;
  const int percent = static_cast<int>(100.0 * static_cast<double>(w.used()) / static_cast<double>(w.size()));
  std::ostringstream message;
  message << "/dev/shm (volume " << volume << ") is " << percent << "% full: " << Bytes(w.used()) << " of "
          << Bytes(w.size()) << " used, peak " << Bytes(w.peak()) << ". A DataLoader worker that needs more dies "
          << "with a Bus error: raise the size (shmguard.io/batch-bytes, num-workers, prefetch-factor).";
  const std::string now = Now();
  auto known = pod.events.find(volume);
  Result<KubeResponse> res = MakeError(Code::kInternal, "not sent");
  EventRecord record;
  if (known != pod.events.end() && !known->second.name.empty()) {
    // A repeat: the same Event, counted (a JSON merge patch, RFC 7386).
    record = known->second;
    record.count++;
    nlohmann::json patch = {{"count", record.count}, {"lastTimestamp", now}, {"message", message.str()}};
    res = client_->Request("PATCH", "/api/v1/namespaces/" + pod.namespace_ + "/events/" + record.name, patch.dump(),
                           "application/merge-patch+json");
  } else {
    nlohmann::json event = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"generateName", pod.name + ".shm-"}, {"namespace", pod.namespace_}}},
        {"involvedObject",
         {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod.name}, {"namespace", pod.namespace_}, {"uid", pod.uid}}},
        {"reason", "ShmNearFull"},
        {"message", message.str()},
        {"type", "Warning"},
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
  if (auto it = pods_.find(pod.uid); it != pods_.end()) it->second.events[volume] = record;
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
