// AddAuditCommand and RunAuditCommand: `shmguard audit`'s flags (CLI11), read into AuditOptions.
#include <algorithm>

#include "cli/commands/audit_command.h"
#include "cli/commands/policy_file.h"

namespace shmguard::cli {

CLI::App* AddAuditCommand(CLI::App& app, AuditCommand& c) {
  AuditOptions& audit = c.options;
  auto* cmd = app.add_subcommand("audit", "Dry-run the webhook over manifest files (CI)");
  cmd->add_option("paths", audit.paths, "files, directories (*.yaml, *.yml, *.json) or - for stdin")->required();
  cmd->add_option("-o,--output", c.format, "table, json, yaml, patched, sarif, junit, github or policyreport")
      ->check([](const std::string& f) {
        return ParseAuditFormat(f) ? std::string()
                                   : "use table, json, yaml, patched, sarif, junit, github or policyreport";
      });
  cmd->add_option("--fail-on", c.fail_on,
                  "exit 1 at a finding this severe: error (default; alias deny), warning (alias warn), info")
      ->check([](const std::string& s) {
        return ParseFailOn(s) ? std::string() : "use error, warning or info (or deny, warn)";
      });
  cmd->add_option("--ignore", c.ignore,
                  "exempt a check by ID (docs/checks.md); repeatable or comma-separated: "
                  "reported as suppressed, never counted")
      ->delimiter(',')
      ->allow_extra_args(false)  // one value per --ignore: paths follow it
      ->check([](const std::string& id) {
        return FindCheck(id) ? std::string() : "\"" + id + "\" is not a check ID (docs/checks.md)";
      });
  cmd->add_option("--report-api", c.report_api,
                  "-o policyreport: wgpolicy (wgpolicyk8s.io/v1alpha2, default) "
                  "or openreports (openreports.io/v1alpha1)")
      ->check(CLI::IsMember({"wgpolicy", "openreports"}));
  cmd->add_option("--docs-url", audit.docs_url,
                  "-o sarif: where docs/checks.md is published (https://...); each rule's helpUri "
                  "links to its check's section")
      ->check([](const std::string& url) {
        const bool absolute = url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0;
        const bool plain =
            std::all_of(url.begin(), url.end(), [](char ch) { return ch > ' ' && ch < 127 && ch != '#'; });
        return absolute && plain ? std::string()
                                 : "an absolute http(s) URL without a fragment, such as "
                                   "https://github.com/ORG/shmguard/blob/v1.0.0/docs/checks.md";
      });
  cmd->add_option("--config", c.config, "policy YAML; built-in defaults without it");
  cmd->add_flag("--policy-mode", audit.policy_mode,
                "report what the admission policies of `shmguard policy export` would do instead of the "
                "webhook (docs/policy-mode.md)");
  cmd->add_option("--observations", c.observations_file,
                  "ShmProfiles (kubectl get shmprofiles -A -o yaml): size each workload from what its pods "
                  "used, as the webhook does");
  cmd->add_option("-j,--jobs", audit.jobs, "threads parsing and evaluating documents (default: one per CPU)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--max-file-bytes", audit.max_file_bytes,
                  "a file (or stdin) holding more is an error; the other paths are still read")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  return cmd;
}

ExitCode RunAuditCommand(AuditCommand& c, std::istream& in, std::ostream& out, std::ostream& err) {
  AuditOptions& audit = c.options;
  audit.output = *ParseAuditFormat(c.format);  // one of them: checked by the parse
  audit.fail_on = *ParseFailOn(c.fail_on);
  for (const auto& id : c.ignore) audit.ignore.checks.push_back(*FindCheck(id));
  audit.report_api = c.report_api == "openreports" ? ReportApi::kOpenReports : ReportApi::kWgPolicy;
  const std::optional<Policy> policy = LoadPolicyFor(c.config, "audit", err);
  if (!LoadObservationsFor(c.observations_file, "audit", c.observations, err)) return ExitCode::kUsage;
  if (!c.observations_file.empty()) audit.observations = &c.observations;
  return policy ? RunAudit(audit, *policy, in, out, err) : ExitCode::kUsage;
}

}  // namespace shmguard::cli
