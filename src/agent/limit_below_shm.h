// LimitBelowShmPods: the node's pods whose memory limit no longer holds their /dev/shm
// (FindLimitBelowShm, resize-below-shm: resized in place after admission, or admitted so where
// the check only warns), kept from the pod informer's events, each told once by a
// ShmMemoryLimitBelowShm Event, and counted in shmguard_pods_memory_limit_below_shm per
// namespace and shmguard_pod_memory_limit_below_shm_bytes per pod: how far the limit is short.
#pragma once

#include <sstream>
#include <vector>

#include "agent/collector.h"
#include "agent/pod_set.h"
#include "core/checks/checks.h"
#include "core/policy/policy.h"
#include "core/values/json_node.h"

namespace shmguard::agent {

using LimitBelowShmPod = FlaggedPod<Finding>;

class LimitBelowShmPods : public Collector {
 public:
  explicit LimitBelowShmPods(const Policy& policy) : policy_(policy) {}

  // A pod added or changed (a resize changes its spec): it is one while it has not ended and its
  // memory limit does not hold its /dev/shm; otherwise it is no longer.
  void Update(JsonNode pod);
  void Remove(JsonNode pod) { pods_.Remove(pod); }
  // The pods found since the last call, each once: the Events to record.
  std::vector<LimitBelowShmPod> TakeNew() { return pods_.TakeNew(); }
  size_t size() const { return pods_.size(); }
  void Collect(std::ostream& out) const override;

 private:
  const Policy& policy_;
  PodSet<Finding> pods_;
};

}  // namespace shmguard::agent
