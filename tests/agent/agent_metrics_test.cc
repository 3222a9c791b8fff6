// The agent's collectors that are no part of their own: the volume gauges with kube-state-metrics'
// labels (escaped as Prometheus escapes them), the planned size only where a pod carries a plan;
// and the API traffic, none without an API server.
#include "agent/agent_metrics.h"

#include <catch2/catch.hpp>
#include <sstream>

namespace shmguard::agent {
namespace {

TEST_CASE("WriteVolumeMetrics labels each volume's gauges and escapes the label values", "[agent_metrics]") {
  VolumeUse planned{"ml", "train-0", "dshm", "Job/train", 10, 100, 50, int64_t{200}, 75};
  planned.leaked = 5;
  planned.leaked_files = 1;
  const VolumeUse odd{"ns", "p\"q\\r\ns", "v", "Pod/p", 1, 2, 3, std::nullopt, 4};
  std::ostringstream out;
  WriteVolumeMetrics(out, {planned, odd});
  const std::string m = out.str();
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
}

TEST_CASE("ApiTraffic writes the informer's and the client's counts, and nothing without an API server",
          "[agent_metrics]") {
  std::ostringstream none;
  ApiTraffic(nullptr, nullptr).Collect(none);
  CHECK(none.str().empty());
  kube::ReflectorStats stats;
  stats.lists = 2;
  stats.watches = 5;
  stats.failures = 1;
  std::ostringstream out;
  ApiTraffic(&stats, nullptr).Collect(out);
  CHECK_THAT(out.str(), Catch::Contains("\nshmguard_agent_lists_total 2\n"));
  CHECK_THAT(out.str(), Catch::Contains("\nshmguard_agent_watches_total 5\n"));
  CHECK_THAT(out.str(), Catch::Contains("\nshmguard_agent_watch_failures_total 1\n"));
  CHECK(out.str().find("shmguard_agent_api_requests_total") == std::string::npos);
}

}  // namespace
}  // namespace shmguard::agent
