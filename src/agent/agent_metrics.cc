// RenderAgentMetrics.
#include "agent/agent_metrics.h"

#include <sstream>

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

std::string RenderAgentMetrics(const std::vector<VolumeUse>& uses, const std::vector<DeviceShmUse>& devices,
                               const AgentCounters& c) {
  std::ostringstream out;
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
    for (const auto& u : uses) out << g.name << VolumeLabels(u) << u.*g.value << "\n";
  }
  // Recommended against actual: with size (what it has) and peak (what it used), a single query
  // finds pods sized far above or below their use.
  PrometheusHeader(out, "shmguard_pod_shm_planned_bytes", "gauge",
                   "The /dev/shm shmguard planned for the pod (its shmguard.io/plan annotation's required), for "
                   "pods that carry a plan.");
  for (const auto& u : uses) {
    if (u.planned) out << "shmguard_pod_shm_planned_bytes" << VolumeLabels(u) << *u.planned << "\n";
  }
  PrometheusHeader(out, "shmguard_pod_shm_learned_bytes", "gauge",
                   "What the pod's peak use teaches its workload's next pods: the peak times the policy's "
                   "observed.margin, in whole MiB (as the webhook sizes from a ShmProfile).");
  for (const auto& u : uses) out << "shmguard_pod_shm_learned_bytes" << VolumeLabels(u) << u.learned << "\n";
  PrometheusHeader(out, "shmguard_pod_shm_leaked_bytes", "gauge",
                   "Bytes of the files in a pod's /dev/shm that no process of the pod holds open or maps, found "
                   "after a container restart: segments a process left when it ended (never counted in the peak).");
  for (const auto& u : uses) out << "shmguard_pod_shm_leaked_bytes" << VolumeLabels(u) << u.leaked << "\n";
  PrometheusHeader(out, "shmguard_pod_shm_leaked_files", "gauge",
                   "Files in a pod's /dev/shm that no process of the pod holds open or maps.");
  for (const auto& u : uses) out << "shmguard_pod_shm_leaked_files" << VolumeLabels(u) << u.leaked_files << "\n";
  PrometheusHeader(out, "shmguard_pod_shm_device_mount", "gauge",
                   "1 for each container whose /dev/shm a device plugin mounted (NVIDIA's in MPS mode: the MPS "
                   "daemon's tmpfs), by the resource and the node's path; hidden=\"true\" when a volume of the "
                   "pod is mounted over it.");
  for (const auto& d : devices) {
    out << "shmguard_pod_shm_device_mount{namespace=\"" << PrometheusLabel(d.namespace_) << "\",pod=\""
        << PrometheusLabel(d.pod) << "\",container=\"" << PrometheusLabel(d.container) << "\",resource=\""
        << PrometheusLabel(d.resource) << "\",host_path=\"" << PrometheusLabel(d.host_path) << "\",hidden=\""
        << (d.hidden ? "true" : "false") << "\"} 1\n";
  }
  // The agent's own numbers without labels, one row each: name, type, help, value.
  struct Plain {
    const char* name;
    const char* type;
    const char* help;
    uint64_t value;
  };
  const Plain plain[] = {
      {"shmguard_agent_device_checkpoint_errors_total", "counter",
       "Versions of the kubelet's device manager checkpoint the agent could not read.", c.checkpoint_errors},
      {"shmguard_agent_api_queue_depth", "gauge",
       "Writes to the API server (Events, ShmProfiles, resizes) waiting on the agent's queue.", c.api_queue_depth},
      {"shmguard_agent_api_queue_dropped_total", "counter",
       "Writes to the API server dropped because the agent's queue was full (1,000) or it stopped.",
       c.api_queue_dropped},
      {"shmguard_agent_leak_scans_total", "counter",
       "Scans of a restarted pod's /dev/shm and processes for leaked segments.", c.leak_scans},
      {"shmguard_agent_leak_scan_failures_total", "counter",
       "Scans that could not read what a pod's processes hold (the agent lacks CAP_SYS_PTRACE or "
       "CAP_DAC_READ_SEARCH): nothing is then called leaked.",
       c.leak_scan_failures},
      {"shmguard_agent_leaked_reclaimed_bytes_total", "counter",
       "Bytes of leaked segments the agent deleted (reclaimLeakedSegments, shmguard.io/reclaim-leaked).",
       c.reclaimed_bytes},
      {"shmguard_agent_leaked_reclaimed_files_total", "counter", "Leaked segments (files) the agent deleted.",
       c.reclaimed_files},
      {"shmguard_agent_leaked_reclaim_failures_total", "counter",
       "Volumes whose leaked segments the agent could not all delete (a read-only mount).", c.reclaim_failures},
      {"shmguard_agent_samples_total", "counter", "Rounds of samples of every watched volume.", c.samples},
  };
  for (const Plain& m : plain) {
    PrometheusHeader(out, m.name, m.type, m.help);
    out << m.name << " " << m.value << "\n";
  }
  PrometheusHeader(out, "shmguard_agent_events_total", "counter",
                   "ShmNearFull Events recorded or counted again, by result (ok, or failed when the API refused or "
                   "could not be reached).");
  out << "shmguard_agent_events_total{result=\"ok\"} " << c.events_ok << "\n";
  out << "shmguard_agent_events_total{result=\"failed\"} " << c.events_failed << "\n";
  PrometheusHeader(out, "shmguard_agent_profile_writes_total", "counter",
                   "ShmProfile writes (a higher peak, or a run), by result.");
  out << "shmguard_agent_profile_writes_total{result=\"ok\"} " << c.profile_writes << "\n";
  out << "shmguard_agent_profile_writes_total{result=\"failed\"} " << c.profile_failures << "\n";
  PrometheusHeader(out, "shmguard_agent_profiles_deleted_total", "counter",
                   "ShmProfiles deleted as not observed for observed.retentionDays.");
  out << "shmguard_agent_profiles_deleted_total " << c.profiles_deleted << "\n";
  PrometheusHeader(out, "shmguard_agent_runs_recorded_total", "counter",
                   "Pods whose end was recorded as a run of their workload.");
  out << "shmguard_agent_runs_recorded_total " << c.runs << "\n";
  if (c.growth) {
    PrometheusHeader(out, "shmguard_agent_resizes_total", "counter",
                     "Growth in place of a /dev/shm, by result: requested (the API server took it), grown (the "
                     "tmpfs was remounted larger), refused (by the kubelet, or nothing to grow within), rejected "
                     "(by the API server), timed_out.");
    const GrowthCounts& g = *c.growth;
    const std::pair<const char*, uint64_t> resizes[] = {{"requested", g.requested},
                                                        {"grown", g.grown},
                                                        {"refused", g.refused},
                                                        {"rejected", g.rejected},
                                                        {"timed_out", g.timed_out}};
    for (const auto& [result, n] : resizes)
      out << "shmguard_agent_resizes_total{result=\"" << result << "\"} " << n << "\n";
  }
  PrometheusHeader(out, "shmguard_agent_pods", "gauge", "Pods of this node the agent knows (from its informer).");
  out << "shmguard_agent_pods " << c.pods << "\n";
  if (c.informer) {
    PrometheusHeader(out, "shmguard_agent_lists_total", "counter",
                     "Lists of the node's pods (the first and each relist), each of one or more pages.");
    out << "shmguard_agent_lists_total " << c.informer->lists << "\n";
    PrometheusHeader(out, "shmguard_agent_watches_total", "counter",
                     "Watches of the node's pods opened (each resumes from the last resourceVersion seen).");
    out << "shmguard_agent_watches_total " << c.informer->watches << "\n";
    PrometheusHeader(out, "shmguard_agent_watch_failures_total", "counter",
                     "Lists and watches that failed (refused, an ERROR event, a broken or silent connection), "
                     "each followed by a backoff.");
    out << "shmguard_agent_watch_failures_total " << c.informer->failures << "\n";
    PrometheusHeader(out, "shmguard_agent_api_requests_total", "counter",
                     "Requests the agent made to the API server (lists, watches, writes).");
    out << "shmguard_agent_api_requests_total " << c.api_requests << "\n";
    PrometheusHeader(out, "shmguard_agent_api_connections_total", "counter",
                     "TLS connections the agent opened to the API server (kept alive and reused).");
    out << "shmguard_agent_api_connections_total " << c.api_connections << "\n";
  }
  PrometheusHeader(out, "shmguard_build_info", "gauge", "Always 1; the version is a label.");
  out << "shmguard_build_info{version=\"" << PrometheusLabel(SHMGUARD_VERSION) << "\"} 1\n";
  return out.str();
}

}  // namespace shmguard::agent
