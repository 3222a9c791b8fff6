// The node agent's collectors that are not a part of their own: each volume's use, size, peak,
// plan, learned size and leaked bytes as gauges labelled by namespace, pod, volume and workload
// (the pod table's); and the agent's traffic with the API server (its informer's and client's).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
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

// One pod volume, or a device plugin's mount at a container's /dev/shm, as an agent reports it.
struct ShmUse {
  std::string namespace_, pod, volume, workload;
  std::string node;                       // the node of the agent that reported it
  uint64_t used = 0, size = 0, peak = 0;  // bytes; none for a device's mount
  // A device plugin's mount (shmguard_pod_shm_device_mount): its resource ("" for a volume), the
  // container, the node's path, and whether a volume of the pod hides it.
  std::string device, container, host_path;
  bool hidden = false;
  // A pod running with less /dev/shm than shmguard would give it
  // (shmguard_pod_shm_unpatched_required_bytes): that size; 0 for any other row.
  uint64_t unpatched_required = 0;
};

// The shmguard_pod_shm_{used,size,peak}_bytes samples of an agent's /metrics text (the
// Prometheus text format, label values escaped as it escapes them), one ShmUse per volume, and
// one per shmguard_pod_shm_device_mount and shmguard_pod_shm_unpatched_required_bytes sample, in
// the order the text first names them. Other
// lines are ignored.
// WriteVolumeMetrics writes them.
std::vector<ShmUse> ParseShmMetrics(std::string_view text);

}  // namespace shmguard::agent
