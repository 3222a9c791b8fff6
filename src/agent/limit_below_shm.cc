// LimitBelowShmPods: found from the informer's pods, told once, rendered.
#include "agent/limit_below_shm.h"

#include <map>

#include "core/node/shm_watch.h"
#include "http/prometheus_text.h"

namespace shmguard::agent {

void LimitBelowShmPods::Update(JsonNode pod) {
  pods_.Update(pod, PodEnded(pod) ? std::nullopt : FindLimitBelowShm(pod, policy_));
}

void LimitBelowShmPods::Collect(std::ostream& out) const {
  const std::vector<LimitBelowShmPod> pods = pods_.List();
  std::map<std::string, int64_t> by_namespace;
  for (const auto& p : pods) by_namespace[p.namespace_]++;
  http::PrometheusHeader(out, "shmguard_pods_memory_limit_below_shm", "gauge",
                         "Pods of this node whose memory limit no longer holds their /dev/shm, by namespace "
                         "(resized in place after admission, or admitted so where shmguard only warns).");
  for (const auto& [ns, n] : by_namespace) {
    out << "shmguard_pods_memory_limit_below_shm{namespace=\"" << http::PrometheusLabel(ns) << "\"} " << n << "\n";
  }
  http::PrometheusHeader(out, "shmguard_pod_memory_limit_below_shm_bytes", "gauge",
                         "How far each such pod's memory limit is below the least that holds its /dev/shm, in bytes.");
  for (const auto& p : pods) {
    out << "shmguard_pod_memory_limit_below_shm_bytes{namespace=\"" << http::PrometheusLabel(p.namespace_)
        << "\",pod=\"" << http::PrometheusLabel(p.name) << "\",volume=\""
        << http::PrometheusLabel(p.value.Value("volume")) << "\"} "
        << p.value.Number("minimum_bytes") - p.value.Number("memory_limit_bytes") << "\n";
  }
}

}  // namespace shmguard::agent
