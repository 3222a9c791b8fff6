// `shmguard policy export`: the policy as admission policies the API server runs itself
// (docs/policy-mode.md; the objects are ExportAdmissionPolicies', core/cel/admission_policy.h).
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "cli/program/exit_code.h"
#include "core/cel/admission_policy.h"
#include "core/policy/policy.h"

namespace shmguard::cli {

struct PolicyExportFlags {
  std::string config;  // --config: the policy file `shmguard-webhook` reads; "" for the built-in defaults
  PolicyExportOptions objects;
  // --static DIR: the objects as kube-apiserver's static manifests (names ending in
  // kStaticSuffix), written to DIR/mutating/<name>.yaml and DIR/validating/<name>.yaml, and the
  // AdmissionConfiguration that loads them printed; "" writes the objects to stdout.
  std::string static_dir;
};

// Adds `policy` with its subcommand `export` to `app`, its flags into `o`; returns `export`,
// whose callback the caller sets.
CLI::App* AddPolicyCommand(CLI::App& app, PolicyExportFlags& o);

// Writes the objects for `policy` to `out` as YAML documents, in the order they are to be
// created, or with `static_dir` to its files (each written whole, then renamed into place, as
// kube-apiserver reloads the directory when it changes) and the AdmissionConfiguration to `out`.
// kUsage, with the reason on `err` and nothing written, for a label or name that is not one
// Kubernetes takes, or a policy ExportAdmissionPolicies refuses; kUsage for a file that cannot
// be written, naming it.
ExitCode RunPolicyExport(const PolicyExportFlags& flags, const Policy& policy, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
