// WriteVolumeMetrics, VolumeGauges and ApiTraffic; ParseShmMetrics, which reads back what
// WriteVolumeMetrics and the agent's other parts write.
#include "agent/agent_metrics.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "http/prometheus_text.h"

namespace shmguard::agent {

using http::PrometheusHeader;
using http::PrometheusLabel;

namespace {

// A volume's labels, as kube-state-metrics names them, and the space before the value.
std::string VolumeLabels(const VolumeUse& u) {
  return "{namespace=\"" + PrometheusLabel(u.namespace_) + "\",pod=\"" + PrometheusLabel(u.pod) + "\",volume=\"" +
         PrometheusLabel(u.volume) + "\",workload=\"" + PrometheusLabel(u.workload) + "\"} ";
}

}  // namespace

void WriteVolumeMetrics(std::ostream& out, const std::vector<VolumeUse>& uses) {
  struct Gauge {
    const char* name;
    const char* help;
    uint64_t VolumeUse::*value;
  };
  // Recommended against actual: with size (what it has) and peak (what it used), a single query
  // finds pods sized far above or below their use.
  const Gauge gauges[] = {
      {"shmguard_pod_shm_used_bytes", "Bytes in use in a pod's memory-backed /dev/shm volume (statfs).",
       &VolumeUse::used},
      {"shmguard_pod_shm_size_bytes", "Size of a pod's memory-backed /dev/shm volume (its tmpfs).", &VolumeUse::size},
      {"shmguard_pod_shm_peak_bytes", "Largest use seen of a pod's /dev/shm volume since the agent found it.",
       &VolumeUse::peak},
  };
  for (const auto& g : gauges) {
    PrometheusHeader(out, g.name, "gauge", g.help);
    for (const auto& u : uses) out << g.name << VolumeLabels(u) << u.*g.value << "\n";
  }
  PrometheusHeader(out, "shmguard_pod_shm_planned_bytes", "gauge",
                   "The /dev/shm shmguard planned for the pod (its shmguard.io/plan annotation's required), for "
                   "pods that carry a plan.");
  for (const auto& u : uses) {
    if (u.planned) out << "shmguard_pod_shm_planned_bytes" << VolumeLabels(u) << *u.planned << "\n";
  }
  struct Signed {
    const char* name;
    const char* help;
    int64_t VolumeUse::*value;
  };
  const Signed learned_and_leaked[] = {
      {"shmguard_pod_shm_learned_bytes",
       "What the pod's peak use teaches its workload's next pods: the peak times the policy's observed.margin, in "
       "whole MiB (as the webhook sizes from a ShmProfile).",
       &VolumeUse::learned},
      {"shmguard_pod_shm_leaked_bytes",
       "Bytes of the files in a pod's /dev/shm that no process of the pod holds open or maps, found after a "
       "container restart: segments a process left when it ended (never counted in the peak).",
       &VolumeUse::leaked},
      {"shmguard_pod_shm_leaked_files", "Files in a pod's /dev/shm that no process of the pod holds open or maps.",
       &VolumeUse::leaked_files},
  };
  for (const auto& g : learned_and_leaked) {
    PrometheusHeader(out, g.name, "gauge", g.help);
    for (const auto& u : uses) out << g.name << VolumeLabels(u) << u.*g.value << "\n";
  }
}

void VolumeGauges::Collect(std::ostream& out) const { WriteVolumeMetrics(out, table_.Uses(margin_ppm_)); }

void ApiTraffic::Collect(std::ostream& out) const {
  if (!informer_) return;
  WriteSample(out, "shmguard_agent_lists_total", "counter",
              "Lists of the node's pods (the first and each relist), each of one or more pages.", informer_->lists);
  WriteSample(out, "shmguard_agent_watches_total", "counter",
              "Watches of the node's pods opened (each resumes from the last resourceVersion seen).",
              informer_->watches);
  WriteSample(out, "shmguard_agent_watch_failures_total", "counter",
              "Lists and watches that failed (refused, an ERROR event, a broken or silent connection), each followed "
              "by a backoff.",
              informer_->failures);
  if (!client_) return;
  WriteSample(out, "shmguard_agent_api_requests_total", "counter",
              "Requests the agent made to the API server (lists, watches, writes).", client_->requests());
  WriteSample(out, "shmguard_agent_api_connections_total", "counter",
              "TLS connections the agent opened to the API server (kept alive and reused).", client_->connections());
}

std::vector<ShmUse> ParseShmMetrics(std::string_view text) {
  static constexpr std::pair<std::string_view, uint64_t ShmUse::*> kGauges[] = {
      {"shmguard_pod_shm_used_bytes", &ShmUse::used},
      {"shmguard_pod_shm_size_bytes", &ShmUse::size},
      {"shmguard_pod_shm_peak_bytes", &ShmUse::peak},
  };
  std::vector<ShmUse> rows;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    auto sample = http::ReadPrometheusSample(text.substr(start, end - start));
    start = end + 1;
    if (!sample || sample->labels.empty() || sample->value < 0) continue;
    auto& labels = sample->labels;
    ShmUse r;
    r.namespace_ = labels["namespace"];
    r.pod = labels["pod"];
    if (sample->name == "shmguard_pod_shm_unpatched_required_bytes") {
      r.volume = labels["policy_made"] == "true" ? "(sized by a policy)" : "(not patched)";
      r.unpatched_required = static_cast<uint64_t>(sample->value);
      rows.push_back(std::move(r));
    } else if (sample->name == "shmguard_pod_shm_device_mount") {
      r.device = labels["resource"];
      r.container = labels["container"];
      r.host_path = labels["host_path"];
      r.hidden = labels["hidden"] == "true";
      r.volume = r.device + (r.hidden ? " (device, hidden)" : " (device)");
      rows.push_back(std::move(r));
    }
    for (const auto& [name, field] : kGauges) {
      if (sample->name != name) continue;
      auto [it, added] = index.emplace(std::make_tuple(r.namespace_, r.pod, labels["volume"]), rows.size());
      if (added) {
        r.volume = labels["volume"];
        r.workload = labels["workload"];
        rows.push_back(std::move(r));
      }
      rows[it->second].*field = static_cast<uint64_t>(sample->value);
    }
  }
  return rows;
}

}  // namespace shmguard::agent
