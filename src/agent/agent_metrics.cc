// WriteVolumeMetrics, VolumeGauges and ApiTraffic.
#include "agent/agent_metrics.h"

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

}  // namespace shmguard::agent
