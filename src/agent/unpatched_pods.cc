// UnpatchedPods: found from the informer's pods, told once, rendered.
#include "agent/unpatched_pods.h"

#include <map>

#include "http/prometheus_text.h"

namespace shmguard::agent {

void UnpatchedPods::Update(JsonNode pod) {
  pods_.Update(pod, PodEnded(pod) ? std::nullopt : FindUnpatched(pod, policy_));
}

void UnpatchedPods::Collect(std::ostream& out) const {
  const std::vector<UnpatchedPod> pods = pods_.List();
  std::map<std::string, int64_t> by_namespace;
  for (const auto& p : pods) by_namespace[p.namespace_]++;
  http::PrometheusHeader(out, "shmguard_unpatched_pods", "gauge",
                         "GPU pods of this node with less /dev/shm than shmguard would give them, by namespace "
                         "(admitted while the webhook could not patch them, or created before it was installed).");
  for (const auto& [ns, n] : by_namespace) {
    out << "shmguard_unpatched_pods{namespace=\"" << http::PrometheusLabel(ns) << "\"} " << n << "\n";
  }
  http::PrometheusHeader(out, "shmguard_pod_shm_unpatched_required_bytes", "gauge",
                         "The /dev/shm shmguard would give each such pod, in bytes; policy_made=\"true\" when an "
                         "admission policy sized it below that.");
  for (const auto& p : pods) {
    out << "shmguard_pod_shm_unpatched_required_bytes{namespace=\"" << http::PrometheusLabel(p.namespace_)
        << "\",pod=\"" << http::PrometheusLabel(p.name) << "\",policy_made=\""
        << (p.value.policy_made ? "true" : "false") << "\"} " << p.value.required_bytes << "\n";
  }
}

}  // namespace shmguard::agent
