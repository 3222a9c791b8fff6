// AddPlanCommand and RunPlanCommand: `shmguard plan`'s flags (CLI11) and their checks.
#include <iostream>

#include "cli/commands/plan_command.h"
#include "cli/commands/policy_file.h"
#include "core/facts/pod_facts.h"

namespace shmguard::cli {
namespace {

// A count as shmguard's flags take it: decimal digits, at most 18 (ParseCount); the error quotes
// the text, not what CLI11 would have made of it.
const CLI::Validator kCount(
    [](std::string& text) -> std::string {
      return ParseCount(text) ? std::string() : "\"" + text + "\" is not a whole number of at most 18 digits";
    },
    "COUNT");

}  // namespace

CLI::App* AddPlanCommand(CLI::App& app, PlanCommand& c) {
  PlanOptions& plan = c.options;
  auto* cmd = app.add_subcommand("plan", "Size /dev/shm for one job from its DataLoader settings");
  // Ranges are RunPlan's to check (it names the flag), as for every other caller; a count too
  // long for int64 is refused here, quoting what was typed (CLI11 would saturate it first).
  auto* workers =
      cmd->add_option("--num-workers", plan.num_workers, "DataLoader num_workers per process")->check(kCount);
  cmd->add_option("--prefetch-factor", plan.prefetch_factor, "DataLoader prefetch_factor (default 2)")->check(kCount);
  cmd->add_option("--batch-bytes", plan.batch_bytes, "bytes of one collated batch, a quantity: 48Mi, 5e7");
  cmd->add_option("--procs", plan.procs, "training processes per pod (default: GPUs, else 1)")->check(kCount);
  cmd->add_option("--gpus", plan.gpus, "GPUs in the pod")->check(kCount);
  cmd->add_option("--nodes", plan.nodes, "pods training together (> 1: multi-node NCCL)")->check(kCount);
  cmd->add_option("--memory-limit", plan.memory_limit, "the pod's memory limit, a quantity: 64Gi");
  cmd->add_flag("--rdma", plan.rdma,
                "the job registers host memory for RDMA (NCCL over InfiniBand/RoCE, EFA, UCX): raise locked memory");
  cmd->add_option("--server", plan.server, "an inference server instead: vllm, sglang, tgi, triton, ray");
  cmd->add_option("--object-store-memory", plan.object_store,
                  "a Ray object store beside the server (or --server ray's), a quantity: 10Gi");
  // Every other flag is the server's own, as its parser spells it (--tensor-parallel-size 8,
  // -tp 8, --distributed-executor-backend ray...): read by the same rows as a pod's launch.
  cmd->allow_extras();
  std::string footer = "Server flags read after --server NAME (as each server's parser spells them):";
  for (const char* name : {"vllm", "sglang", "tgi", "triton", "ray"}) {
    std::string flags;
    for (std::string_view f : ServerFlagNames(*ParseServer(name))) flags += (flags.empty() ? "" : " ") + std::string(f);
    footer += "\n  " + std::string(name) + ": " + flags;
  }
  cmd->footer(footer);
  cmd->add_option("-o,--output", plan.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--config", c.config, "policy YAML (sizing constants); built-in defaults without it");
  cmd->parse_complete_callback([&c, cmd, workers] {
    c.options.server_args = cmd->remaining();
    c.workers_given = workers->count() > 0;
  });
  return cmd;
}

ExitCode RunPlanCommand(const PlanCommand& c, std::ostream& out, std::ostream& err) {
  const PlanOptions& plan = c.options;
  if (plan.server.empty() && !plan.server_args.empty()) {
    err << "shmguard plan: " << plan.server_args.front()
        << " is not a flag of plan (a server's flags follow --server NAME)\n";
    return ExitCode::kUsage;
  }
  if (plan.server.empty() && !c.workers_given) {
    err << "shmguard plan: --num-workers is required (or --server for an inference server)\n";
    return ExitCode::kUsage;
  }
  const std::optional<Policy> policy = LoadPolicyFor(c.config, "plan", err);
  return policy ? RunPlan(plan, *policy, out, err) : ExitCode::kUsage;
}

}  // namespace shmguard::cli
