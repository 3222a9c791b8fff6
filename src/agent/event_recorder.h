// EventRecorder: the agent's Events on a pod (ShmNearFull, ShmGrown, ShmGrowthRefused), recorded
// as client-go's EventRecorder records them — one Event per pod, reason and volume, a repeat
// counted on it (count, lastTimestamp, message) as its EventCorrelator folds repeats.
#pragma once

#include <memory>
#include <string>

#include "agent/agent_events.h"
#include "agent/api_failure.h"
#include "agent/collector.h"
#include "agent/pod_table.h"
#include "kube/kube_client.h"

namespace shmguard::agent {

class EventRecorder : public Collector {
 public:
  // `client` may be null (tests): nothing is recorded. An Event the API refused or never
  // answered goes to `on_failure` too.
  EventRecorder(std::shared_ptr<kube::KubeClient> client, std::string node_name, PodTable& table,
                ApiFailureSink on_failure = {})
      : client_(std::move(client)), node_name_(std::move(node_name)), table_(table), results_(std::move(on_failure)) {}

  // Event `event` (its reason and type: agent_events.h) on `pod` about `volume`, saying
  // `message`; a repeat counts on the first. Counted in results().
  void Record(const AgentPod& pod, const std::string& volume, AgentEvent event, const std::string& message);

  const WriteResults& results() const { return results_; }
  // shmguard_agent_events_total by result.
  void Collect(std::ostream& out) const override;

 private:
  std::shared_ptr<kube::KubeClient> client_;
  std::string node_name_;
  PodTable& table_;
  WriteResults results_;
};

// The time now as the API writes it: 2026-11-26T07:00:00Z.
std::string NowRfc3339();

}  // namespace shmguard::agent
