// `shmguard plan`: the /dev/shm size for one job from its DataLoader settings, with the
// arithmetic line by line. It calls the planner and the memory-limit check the webhook uses
// (PlanShm, CheckLimit in core/sizing/memory_limit.h), so the calculator and the cluster never disagree.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/program/exit_code.h"
#include "core/policy/policy.h"

namespace shmguard::cli {

// Ranges as in shm_plan.h (kMaxWorkers...); RunPlan checks them and names the flag.
struct PlanOptions {
  int64_t num_workers = 0;                  // 0..kMaxWorkers
  std::optional<int64_t> prefetch_factor;   // 1..kMaxPrefetchFactor. Default: the policy's (2)
  std::string batch_bytes;                  // a quantity, required when workers > 0; "" none
  std::optional<int64_t> procs;             // 1..kMaxProcs. Default: GPUs, else 1
  int64_t gpus = 0;                         // 0..kMaxProcs (one process per GPU at most)
  int64_t nodes = 1;                        // 1..kMaxNodes
  std::optional<std::string> memory_limit;  // a quantity; none = unknown
  std::string output = "text";              // text | json
  // The job registers host memory for RDMA (NCCL over InfiniBand or RoCE, EFA, UCX): locked
  // memory is then raised where the policy's ipcLock says (ipc_lock.h). Default: false.
  bool rdma = false;
  // An inference server instead of (or besides) a DataLoader: vllm, sglang, tgi, triton, ray
  // (server_plan.h), with the flags that size it as its own parser spells them
  // ("--tensor-parallel-size", "8"), read by ReadServerArgs; also plan's shorthands --tp, --pp
  // and --dp for any server, and --mm-processor-cache-shm for vLLM's --mm-processor-cache-type
  // shm.
  std::string server;
  std::vector<std::string> server_args;
  std::string object_store;  // --object-store-memory, a quantity: a Ray object store; "" none
};

// Prints the plan to `out`. Returns kOk when it fits, kFindings when it would be denied,
// kUsage (message on `err`) for invalid values.
ExitCode RunPlan(const PlanOptions& options, const Policy& policy, std::ostream& out, std::ostream& err);

// `shmguard plan` as typed (plan_flags.cc): its options, --config, and what the parse leaves for
// the run to check (whether --num-workers was given; every unknown flag is the server's).
struct PlanCommand {
  PlanOptions options;
  std::string config;
  bool workers_given = false;
};

CLI::App* AddPlanCommand(CLI::App& app, PlanCommand& command);
// The parse's checks (a server's flag without --server, no --num-workers nor --server), the
// policy, then RunPlan.
ExitCode RunPlanCommand(const PlanCommand& command, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
