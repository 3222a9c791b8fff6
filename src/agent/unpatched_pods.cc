// UnpatchedPods: found from the informer's pods, told once, rendered.
#include "agent/unpatched_pods.h"

#include "http/prometheus_text.h"

namespace shmguard::agent {

void UnpatchedPods::Update(JsonNode pod) {
  JsonNode meta = pod.Find("metadata");
  const std::string uid(meta.StringMember("uid"));
  if (uid.empty()) return;
  const std::string_view phase = pod.Find("status").StringMember("phase");
  std::optional<Unpatched> found;
  if (phase != "Succeeded" && phase != "Failed") found = FindUnpatched(pod, policy_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!found) {
    pods_.erase(uid);
    return;
  }
  auto [it, added] = pods_.try_emplace(uid);
  it->second = {std::string(meta.StringMember("namespace")), std::string(meta.StringMember("name")), uid, *found};
  if (added) new_.push_back(it->second);
}

void UnpatchedPods::Remove(JsonNode pod) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_.erase(std::string(pod.Find("metadata").StringMember("uid")));
}

std::vector<UnpatchedPod> UnpatchedPods::TakeNew() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(new_, {});
}

size_t UnpatchedPods::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_.size();
}

void UnpatchedPods::Collect(std::ostream& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> by_namespace;
  for (const auto& [uid, p] : pods_) by_namespace[p.namespace_]++;
  http::PrometheusHeader(out, "shmguard_unpatched_pods", "gauge",
                         "GPU pods of this node with less /dev/shm than shmguard would give them, by namespace "
                         "(admitted while the webhook could not patch them, or created before it was installed).");
  for (const auto& [ns, n] : by_namespace) {
    out << "shmguard_unpatched_pods{namespace=\"" << http::PrometheusLabel(ns) << "\"} " << n << "\n";
  }
  http::PrometheusHeader(out, "shmguard_pod_shm_unpatched_required_bytes", "gauge",
                         "The /dev/shm shmguard would give each such pod, in bytes; policy_made=\"true\" when an "
                         "admission policy sized it below that.");
  for (const auto& [uid, p] : pods_) {
    out << "shmguard_pod_shm_unpatched_required_bytes{namespace=\"" << http::PrometheusLabel(p.namespace_)
        << "\",pod=\"" << http::PrometheusLabel(p.name) << "\",policy_made=\"" << (p.shm.policy_made ? "true" : "false")
        << "\"} " << p.shm.required_bytes << "\n";
  }
}

}  // namespace shmguard::agent
