// `shmguard plan`: the /dev/shm size for one job from its DataLoader settings, with the
// arithmetic line by line. It builds the Pod those settings describe and evaluates it with the
// same engine as the webhook, so the calculator and the cluster never disagree.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "cli/exit_code.h"
#include "shmguard/policy.h"

namespace shmguard::cli {

struct PlanOptions {
  std::string num_workers;                    // required, e.g. "8"
  std::optional<std::string> prefetch_factor;  // Default: the policy's (2)
  std::optional<std::string> batch_bytes;      // a quantity, required when workers > 0
  std::optional<std::string> procs;            // Default: GPUs, else 1
  int64_t gpus = 0;
  int64_t nodes = 1;
  std::optional<std::string> memory_limit;     // a quantity; none = unknown
  std::string output = "text";                 // text | json
};

// Prints the plan to `out`. Returns kOk when it fits, kFindings when it would be denied,
// kUsage (message on `err`) for invalid values.
ExitCode RunPlan(const PlanOptions& options, const Policy& policy, std::ostream& out,
                 std::ostream& err);

}  // namespace shmguard::cli
