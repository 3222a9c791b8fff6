// `shmguard report PATH...`: the audit of manifests, or of what `kubectl get pods,shmprofiles -A
// -o json` prints, as one HTML page for people (report_model.h) and, with --json FILE, the same
// data as JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "cli/commands/audit_command.h"
#include "cli/program/exit_code.h"
#include "core/plan/shm_profile.h"

namespace shmguard::cli {

struct ReportCommand {
  AuditOptions audit;             // paths, --jobs, --max-file-bytes, --policy-mode
  std::string config;             // --config: policy YAML; built-in defaults without it
  std::string observations_file;  // --observations: ShmProfiles beside those in the input
  std::string json_file;          // --json: where the report's JSON goes
  ObservationIndex observations;  // read from observations_file
};

CLI::App* AddReportCommand(CLI::App& app, ReportCommand& command);

// Writes the HTML page on `out` (and the JSON to json_file). Input that cannot be read is named
// on `err`, counted in the report, and the rest still reported: kUsage then, else kOk. kUsage
// without a page when the config, the observations or the JSON file cannot be read or written.
ExitCode RunReport(ReportCommand& command, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
