// AddReportCommand and RunReport: StreamAudit's records into report_model's JSON and page.
#include "cli/commands/report_command.h"

#include <fstream>
#include <ostream>

#include "cli/commands/policy_file.h"
#include "cli/report/report_model.h"

namespace shmguard::cli {

CLI::App* AddReportCommand(CLI::App& app, ReportCommand& c) {
  auto* cmd = app.add_subcommand(
      "report", "Write an HTML page of /dev/shm by namespace and workload: what each has, needs and used");
  cmd->add_option("paths", c.audit.paths,
                  "files, directories (*.yaml, *.yml, *.json) or - for stdin, such as the output of "
                  "kubectl get pods,shmprofiles -A -o json")
      ->required();
  cmd->add_option("--json", c.json_file, "also write the report's data as JSON to this file");
  cmd->add_option("--config", c.config, "policy YAML; built-in defaults without it");
  cmd->add_option("--observations", c.observations_file,
                  "ShmProfiles (kubectl get shmprofiles -A -o yaml) besides any in the input");
  cmd->add_flag("--policy-mode", c.audit.policy_mode,
                "report what the admission policies of `shmguard policy export` would do instead of the webhook");
  cmd->add_option("-j,--jobs", c.audit.jobs, "threads parsing and evaluating documents (default: one per CPU)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--max-file-bytes", c.audit.max_file_bytes,
                  "a file (or stdin) holding more is an error; the other paths are still read")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  return cmd;
}

ExitCode RunReport(ReportCommand& c, std::istream& in, std::ostream& out, std::ostream& err) {
  const std::optional<Policy> policy = LoadPolicyFor(c.config, "report", err);
  if (!policy || !LoadObservationsFor(c.observations_file, "report", c.observations, err)) return ExitCode::kUsage;
  if (!c.observations_file.empty()) c.audit.observations = &c.observations;
  std::ofstream json_out;
  if (!c.json_file.empty()) {
    json_out.open(c.json_file, std::ios::binary | std::ios::trunc);
    if (!json_out) {
      err << "shmguard report: --json " << c.json_file << ": cannot be written\n";
      return ExitCode::kUsage;
    }
  }
  std::vector<AuditRecord> records;
  const AuditSummary summary = StreamAudit(c.audit, *policy, in, io::JsonLists::kItemByItem, false,
                                           [&](const io::Document&, std::vector<AuditRecord>&& of_document) {
                                             for (auto& r : of_document) {
                                               if (r.verdict == AuditVerdict::kError) {
                                                 err << "shmguard report: " << r.findings.front().finding.Value("error")
                                                     << "\n";
                                               }
                                               records.push_back(std::move(r));
                                             }
                                           });
  const nlohmann::json report = ReportJson(records, summary);
  if (json_out.is_open()) {
    json_out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!json_out.flush()) {
      err << "shmguard report: --json " << c.json_file << ": write failed\n";
      return ExitCode::kUsage;
    }
  }
  out << ReportHtml(report);
  return summary.Count(AuditVerdict::kError) ? ExitCode::kUsage : ExitCode::kOk;
}

}  // namespace shmguard::cli
