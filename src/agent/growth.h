// Growth in place: where a namespace has it on (the label shmguard.io/grow-in-place=true, or a
// policy rule's growInPlace), a crossing asks the API server to raise the volume's sizeLimit
// through the pod's resize subresource (Kubernetes 1.37's
// InPlacePodVerticalScalingMemoryBackedVolumes), once per pod and volume; the outcome is read —
// the remounted size (ShmGrown), or the kubelet's refusal (PodResizePending, Infeasible: cgroup
// v1 nodes, the gate off), which is reported (ShmGrowthRefused) and undone, leaving the recorded
// peak for the workload's next run.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/collector.h"
#include "agent/event_recorder.h"
#include "agent/pod_table.h"
#include "agent/profile_recorder.h"
#include "agent/sampler.h"
#include "core/policy/policy.h"
#include "kube/kube_client.h"

namespace shmguard::agent {

// Counts of growth in place, by result.
struct GrowthCounts {
  std::atomic<uint64_t> requested{0}, grown{0}, refused{0}, rejected{0}, timed_out{0};
};

class Grower : public Collector {
 public:
  // `client` may be null (tests): nothing is grown.
  Grower(std::shared_ptr<kube::KubeClient> client, const Policy& policy, PodTable& table, EventRecorder& events,
         ProfileRecorder& profiles, bool record_profiles)
      : client_(std::move(client)),
        policy_(policy),
        table_(table),
        events_(events),
        profiles_(profiles),
        record_profiles_(record_profiles) {}

  // A crossing of `volume` of `pod`: asks for a larger sizeLimit where growth is on.
  void Grow(const AgentPod& pod, const std::string& volume, const ShmWatch& w);
  // What came of a resize: grown or timed out (the sampler saw it), or refused (the pod said).
  void Settle(const ResizeOutcome& o);
  void Settle(const RefusedResize& r);

  const GrowthCounts& counts() const { return counts_; }
  // shmguard_agent_resizes_total by result.
  void Collect(std::ostream& out) const override;

 private:
  bool Enabled(const std::string& namespace_name);
  void Remember(const AgentPod& pod, const std::string& volume, const GrowthState& state);

  std::shared_ptr<kube::KubeClient> client_;
  const Policy& policy_;
  PodTable& table_;
  EventRecorder& events_;
  ProfileRecorder& profiles_;
  bool record_profiles_;
  GrowthCounts counts_;
  struct NamespaceGrowth {
    bool on = false;
    Clock::time_point read;
  };
  std::mutex mu_;
  std::map<std::string, NamespaceGrowth> namespaces_;
};

}  // namespace shmguard::agent
