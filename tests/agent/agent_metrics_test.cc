// RenderAgentMetrics: the agent's gauges per volume with kube-state-metrics' labels (escaped as
// Prometheus escapes them), the planned size only where a pod carries a plan, and its counters.
#include "agent/agent_metrics.h"

#include <catch2/catch.hpp>

namespace shmguard::agent {
namespace {

TEST_CASE("RenderAgentMetrics labels each volume's gauges and escapes the label values", "[agent_metrics]") {
  VolumeUse planned{"ml", "train-0", "dshm", "Job/train", 10, 100, 50, int64_t{200}, 75};
  planned.leaked = 5;
  planned.leaked_files = 1;
  const VolumeUse odd{"ns", "p\"q\\r\ns", "v", "Pod/p", 1, 2, 3, std::nullopt, 4};
  AgentCounters c;
  c.samples = 7;
  c.leak_scans = 3;
  c.reclaimed_bytes = 9;
  const std::string m = RenderAgentMetrics({planned, odd}, {}, c);
  const std::string labels = R"({namespace="ml",pod="train-0",volume="dshm",workload="Job/train"} )";
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"shmguard_pod_shm_used_bytes", "10"},
                                                        {"shmguard_pod_shm_size_bytes", "100"},
                                                        {"shmguard_pod_shm_peak_bytes", "50"},
                                                        {"shmguard_pod_shm_planned_bytes", "200"},
                                                        {"shmguard_pod_shm_learned_bytes", "75"},
                                                        {"shmguard_pod_shm_leaked_bytes", "5"},
                                                        {"shmguard_pod_shm_leaked_files", "1"}}) {
    CAPTURE(name);
    CHECK_THAT(m, Catch::Contains("\n" + name + labels + value + "\n"));
    CHECK_THAT(m, Catch::Contains("# TYPE " + name + " gauge\n"));
  }
  // Prometheus' text format escapes \, " and a newline in a label value.
  CHECK_THAT(m, Catch::Contains(R"(shmguard_pod_shm_used_bytes{namespace="ns",pod="p\"q\\r\ns",volume="v")"));
  // No plan, no planned gauge for it.
  CHECK(m.find(R"(shmguard_pod_shm_planned_bytes{namespace="ns")") == std::string::npos);
  CHECK_THAT(m, Catch::Contains("\nshmguard_agent_samples_total 7\n"));
  CHECK_THAT(m, Catch::Contains("\nshmguard_agent_leak_scans_total 3\n"));
  CHECK_THAT(m, Catch::Contains("\nshmguard_agent_leaked_reclaimed_bytes_total 9\n"));
  // Without an API server (no informer), none of its counters.
  CHECK(m.find("shmguard_agent_watches_total") == std::string::npos);
  CHECK_THAT(m, Catch::Contains("shmguard_build_info{version=\""));
}

TEST_CASE("RenderAgentMetrics shows each device plugin's mount at /dev/shm, hidden or not", "[agent_metrics]") {
  DeviceShmUse d;
  d.namespace_ = "ml";
  d.pod = "mps-0";
  d.uid = "u1";
  d.container = "c";
  d.resource = "nvidia.com/gpu.shared";
  d.host_path = "/run/nvidia/mps/shm";
  d.hidden = true;
  const std::string m = RenderAgentMetrics({}, {d}, AgentCounters{});
  CHECK_THAT(m,
             Catch::Contains(R"(shmguard_pod_shm_device_mount{namespace="ml",pod="mps-0",container="c",)"
                             R"(resource="nvidia.com/gpu.shared",host_path="/run/nvidia/mps/shm",hidden="true"} 1)"));
}

}  // namespace
}  // namespace shmguard::agent
