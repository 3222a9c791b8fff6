// EventRecorder: the agent's Events on a pod (ShmNearFull, ShmGrown, ShmGrowthRefused), recorded
// as client-go's EventRecorder records them — one Event per pod, reason and volume, a repeat
// counted on it (count, lastTimestamp, message) as its EventCorrelator folds repeats.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "agent/pod_table.h"
#include "kube/kube_client.h"

namespace shmguard::agent {

class EventRecorder {
 public:
  // `client` may be null (tests): nothing is recorded.
  EventRecorder(std::shared_ptr<kube::KubeClient> client, std::string node_name, PodTable& table)
      : client_(std::move(client)), node_name_(std::move(node_name)), table_(table) {}

  // Event `reason` of `type` (Normal, Warning) on `pod` about `volume`; a repeat counts on the
  // first. Counted in ok() or failed().
  void Record(const AgentPod& pod, const std::string& volume, const std::string& reason, const std::string& type,
              const std::string& message);

  uint64_t ok() const { return ok_; }
  uint64_t failed() const { return failed_; }

 private:
  std::shared_ptr<kube::KubeClient> client_;
  std::string node_name_;
  PodTable& table_;
  std::atomic<uint64_t> ok_{0}, failed_{0};
};

// The time now as the API writes it: 2026-11-26T07:00:00Z.
std::string NowRfc3339();

}  // namespace shmguard::agent
