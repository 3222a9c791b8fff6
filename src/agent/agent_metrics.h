// The node agent's collectors that are not a part of their own: each volume's use, size, peak,
// plan, learned size and leaked bytes as gauges labelled by namespace, pod, volume and workload
// (the pod table's); and the agent's traffic with the API server (its informer's and client's).
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "agent/collector.h"
#include "agent/pod_table.h"
#include "kube/kube_client.h"
#include "kube/reflector.h"

namespace shmguard::agent {

// The per-volume gauges of `uses`; planned only for the volumes of pods that carry a plan.
void WriteVolumeMetrics(std::ostream& out, const std::vector<VolumeUse>& uses);

// The pod table's volumes, as WriteVolumeMetrics writes them, learned at `margin_ppm`.
class VolumeGauges : public Collector {
 public:
  VolumeGauges(const PodTable& table, int64_t margin_ppm) : table_(table), margin_ppm_(margin_ppm) {}
  void Collect(std::ostream& out) const override;

 private:
  const PodTable& table_;
  int64_t margin_ppm_;
};

// The lists, watches and failures of the informer, and the client's requests and connections;
// nothing without an API server (`informer` null).
class ApiTraffic : public Collector {
 public:
  ApiTraffic(const kube::ReflectorStats* informer, const kube::KubeClient* client)
      : informer_(informer), client_(client) {}
  void Collect(std::ostream& out) const override;

 private:
  const kube::ReflectorStats* informer_;
  const kube::KubeClient* client_;
};

}  // namespace shmguard::agent
