// UnpatchedPods: the node's GPU pods that run with less /dev/shm than shmguard would give them
// (FindUnpatched: admitted while the webhook was down or slow, created before it was installed,
// or sized by an admission policy below the webhook's plan), kept from the pod informer's
// events, each told once by a ShmUnpatched Event, and counted in shmguard_unpatched_pods per
// namespace and shmguard_pod_shm_unpatched_required_bytes per pod. Nothing is unseen.
#pragma once

#include <sstream>
#include <vector>

#include "agent/collector.h"
#include "agent/pod_set.h"
#include "core/node/shm_watch.h"
#include "core/policy/policy.h"
#include "core/values/json_node.h"

namespace shmguard::agent {

using UnpatchedPod = FlaggedPod<Unpatched>;

class UnpatchedPods : public Collector {
 public:
  explicit UnpatchedPods(const Policy& policy) : policy_(policy) {}

  // A pod added or changed: it is one while it has not ended and shmguard would still change its
  // /dev/shm; otherwise it is no longer.
  void Update(JsonNode pod);
  // A pod deleted.
  void Remove(JsonNode pod) { pods_.Remove(pod); }
  // The pods found since the last call, each once: the Events to record.
  std::vector<UnpatchedPod> TakeNew() { return pods_.TakeNew(); }
  size_t size() const { return pods_.size(); }
  // Their series, in the Prometheus text format.
  void Collect(std::ostream& out) const override;

 private:
  const Policy& policy_;
  PodSet<Unpatched> pods_;
};

}  // namespace shmguard::agent
