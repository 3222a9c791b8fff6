// `shmguard audit`: the webhook's verdicts over manifest files, offline (README "shmguard audit"). Reads files,
// directories and stdin; evaluates every object (and every item of a List); keeps going past
// documents that do not parse. Documents are parsed and evaluated on a few threads and printed
// in input order as they finish, so memory stays flat however long the stream.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/outputs/audit_options.h"
#include "cli/outputs/audit_record.h"
#include "cli/program/exit_code.h"
#include "core/policy/policy.h"
#include "io/files/input_limits.h"
#include "io/files/manifests.h"

namespace shmguard::cli {

AuditSummary StreamAudit(const AuditOptions& o, const Policy& policy, std::istream& in, io::JsonLists lists,
                         bool locate, const std::function<void(const io::Document&, std::vector<AuditRecord>&&)>& each);

struct AuditResult {
  std::vector<io::Document> documents;
  std::vector<AuditRecord> records;
  AuditSummary summary;
};

// StreamAudit with JsonLists::kWhole, everything kept and located (tests, small inputs).
AuditResult CollectAudit(const std::vector<std::string>& paths, const Policy& policy, std::istream& in,
                         const Exemptions& exemptions = {});

// The whole command: stream, print in the chosen format, and return kUsage when any input was
// unreadable, else kFindings when a finding that is not suppressed reaches --fail-on, else kOk.
ExitCode RunAudit(const AuditOptions& options, const Policy& policy, std::istream& in, std::ostream& out,
                  std::ostream& err);

// `shmguard audit` as typed (audit_flags.cc): the options, and the flags' words before they are
// read into them (checked by the parse; read by RunAuditCommand).
struct AuditCommand {
  AuditOptions options;
  std::string config, format = "table", fail_on = "error", report_api = "wgpolicy", observations_file;
  std::vector<std::string> ignore;
  ObservationIndex observations;  // read from observations_file
};

CLI::App* AddAuditCommand(CLI::App& app, AuditCommand& command);
// The flags into the options, the policy and the observations, then RunAudit.
ExitCode RunAuditCommand(AuditCommand& command, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
