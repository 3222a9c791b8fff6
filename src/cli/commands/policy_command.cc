// `shmguard policy export`: flags, and the objects as YAML documents.
#include "cli/commands/policy_command.h"

#include <algorithm>
#include <cctype>
#include <ostream>

#include "io/formats/yaml_emit.h"

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
  cmd->add_option("--pod-security-label", o.objects.pod_security_label,
                  "the namespace label that holds its Pod Security level (default "
                  "pod-security.kubernetes.io/enforce)");
  cmd->add_option_function<std::string>(
         "--mode", [&o](const std::string& mode) { o.objects.hybrid = mode == "hybrid"; },
         "policy: every object, shmguard without a webhook (default); hybrid: the mutating policy and its binding "
         "only, a floor under the webhook, which puts its own plan in its place")
      ->check(CLI::IsMember({"policy", "hybrid"}));
  return cmd;
}

namespace {

// A label key as Kubernetes validates it (IsQualifiedName): an optional DNS subdomain prefix and
// '/', then 1 to 63 of [A-Za-z0-9-_.], starting and ending alphanumeric.
bool IsLabelKey(std::string_view key) {
  const size_t slash = key.find('/');
  std::string_view prefix = slash == std::string_view::npos ? "" : key.substr(0, slash);
  std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (slash != std::string_view::npos) {
    if (prefix.empty() || prefix.size() > 253 || !alnum(prefix.front()) || !alnum(prefix.back())) return false;
    for (char c : prefix) {
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
            c == '.')) {
        return false;
      }
    }
  }
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

ExitCode RunPolicyExport(const PolicyExportOptions& o, const Policy& policy, std::ostream& out, std::ostream& err) {
  for (const auto& [flag, label] : {std::pair<const char*, const std::string&>{"--enabled-label", o.enabled_label},
                                    {"--enforce-label", o.enforce_label},
                                    {"--pod-security-label", o.pod_security_label}}) {
    if (!IsLabelKey(label)) {
      err << "shmguard policy export: " << flag << ": \"" << label
          << "\" is not a label key ([DNS subdomain/]name of letters, digits, '-', '_', '.')\n";
      return ExitCode::kUsage;
    }
  }
  auto objects = ExportAdmissionPolicies(policy, o);
  if (!objects) {
    err << "shmguard policy export: " << objects.error().message << "\n";
    return ExitCode::kUsage;
  }
  bool first = true;
  for (const auto& object : *objects) {
    out << (first ? "" : "---\n") << io::JsonToYaml(object);
    first = false;
  }
  return ExitCode::kOk;
}

}  // namespace shmguard::cli
