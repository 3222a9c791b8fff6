// `shmguard policy export`: the policy as admission policies the API server runs itself
// (docs/policy-mode.md; the objects are ExportAdmissionPolicies', core/cel/admission_policy.h).
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "cli/commands/exit_code.h"
#include "core/cel/admission_policy.h"
#include "core/policy/policy.h"

namespace shmguard::cli {

struct PolicyExportFlags {
  std::string config;  // --config: the policy file `serve` reads; "" for the built-in defaults
  PolicyExportOptions objects;
};

// Adds `policy` with its subcommand `export` to `app`, its flags into `o`; returns `export`,
// whose callback the caller sets.
CLI::App* AddPolicyCommand(CLI::App& app, PolicyExportFlags& o);

// Writes the objects for `policy` to `out` as YAML documents, in the order they are to be
// created. kUsage, with the reason on `err` and nothing on `out`, for a label or name that is not
// one Kubernetes takes, or a policy ExportAdmissionPolicies refuses.
ExitCode RunPolicyExport(const PolicyExportOptions& o, const Policy& policy, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
