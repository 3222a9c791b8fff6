// `shmguard policy export`: flags, and the objects as YAML documents.
#include "cli/policy_command.h"

#include <ostream>

#include "io/yaml_emit.h"

namespace shmguard::cli {

CLI::App* AddPolicyCommand(CLI::App& app, PolicyExportFlags& o) {
  auto* policy = app.add_subcommand("policy", "Policy mode: shmguard as admission policies, without a webhook");
  policy->require_subcommand(1);
  auto* cmd = policy->add_subcommand(
      "export", "Write the MutatingAdmissionPolicy, ValidatingAdmissionPolicies and bindings for a policy file");
  cmd->add_option("--config", o.config, "policy YAML, as serve reads it; built-in defaults without it");
  cmd->add_option("--name", o.objects.name, "the objects' name (default shmguard)");
  cmd->add_option("--exclude-namespace", o.objects.excluded_namespaces,
                  "a namespace the bindings never reach (repeatable; default kube-system, kube-public, "
                  "kube-node-lease)");
  cmd->add_option("--enabled-label", o.objects.enabled_label,
                  "namespaces labelled LABEL=false are left alone (default shmguard.io/enabled)");
  cmd->add_option("--enforce-label", o.objects.enforce_label,
                  "namespaces labelled LABEL=true are enforced (default shmguard.io/enforce)");
  return cmd;
}

ExitCode RunPolicyExport(const PolicyExportOptions& o, const Policy& policy, std::ostream& out) {
  bool first = true;
  for (const auto& object : ExportAdmissionPolicies(policy, o)) {
    out << (first ? "" : "---\n") << io::JsonToYaml(object);
    first = false;
  }
  return ExitCode::kOk;
}

}  // namespace shmguard::cli
