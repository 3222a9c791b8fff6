// The servers' tests: a container's launch as ReadServerLaunch reads it, and its plan.
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "core/plan/shm_plan.h"
#include "core/policy/policy.h"
#include "core/servers/server_plan.h"
#include "core/values/json_node.h"
#include "test_util.h"

namespace shmguard::test {

inline constexpr int64_t kMiB = int64_t{1} << 20, kGiB = int64_t{1} << 30;

// The launch of one container, written as YAML ("{command: [...], env: [...]}").
inline ServerLaunch LaunchOf(const std::string& container_yaml) {
  const nlohmann::json c = Yaml(container_yaml);
  auto l = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
  REQUIRE(l);
  REQUIRE(l->has_value());
  return **l;
}

inline ServerPlan PlanOf(const std::string& container_yaml, int64_t gpus,
                         std::optional<int64_t> memory_limit = std::nullopt) {
  auto p = PlanServer(LaunchOf(container_yaml), gpus, memory_limit);
  REQUIRE(p);
  return *p;
}

// The size the documented formula gives a pod of `procs` whose server puts `server_bytes` in
// /dev/shm, before NCCL: what the measured oracles hold a plan's bytes to.
inline int64_t RequiredForServer(int64_t procs, int64_t server_bytes) {
  ShmInputs in;
  in.procs = procs;
  in.nccl_shm = false;
  in.server_bytes = server_bytes;
  auto plan = PlanShm(in, SizingConstants{});
  REQUIRE(plan);
  return plan->required_bytes;
}

}  // namespace shmguard::test
