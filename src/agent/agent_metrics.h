// The node agent's metrics, in Prometheus's text format: each volume's use, size and peak as
// gauges labelled by namespace, pod, volume and workload; each device plugin's mount at a
// container's /dev/shm; and the agent's own counters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/device_mounts.h"
#include "agent/growth.h"
#include "agent/pod_table.h"
#include "kube/reflector.h"

namespace shmguard::agent {

// What the metrics say, read from the agent's parts.
struct AgentCounters {
  uint64_t samples = 0, pods = 0;
  uint64_t events_ok = 0, events_failed = 0;
  uint64_t profile_writes = 0, profile_failures = 0, runs = 0, profiles_deleted = 0;
  const GrowthCounts* growth = nullptr;
  const kube::ReflectorStats* informer = nullptr;  // null without an API server
  uint64_t api_requests = 0, api_connections = 0;
  uint64_t checkpoint_errors = 0;                       // versions of the device checkpoint that could not be read
  uint64_t api_queue_depth = 0, api_queue_dropped = 0;  // the writes waiting, and those dropped
  // Leaked segments: pods scanned, and what was deleted (and deletions that failed).
  uint64_t leak_scans = 0, leak_scan_failures = 0, reclaimed_bytes = 0, reclaimed_files = 0, reclaim_failures = 0;
};

std::string RenderAgentMetrics(const std::vector<VolumeUse>& uses, const std::vector<DeviceShmUse>& devices,
                               const AgentCounters& c);

}  // namespace shmguard::agent
