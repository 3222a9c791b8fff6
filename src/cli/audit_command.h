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

#include "cli/audit_record.h"
#include "cli/exit_code.h"
#include "io/input_limits.h"
#include "io/manifests.h"
#include "shmguard/policy/policy.h"

namespace shmguard::cli {

enum class AuditFormat { kTable, kJson, kYaml, kPatched, kSarif, kJunit, kGithub, kPolicyReport };
// By the names --output takes: "table", "json", "yaml", "patched", "sarif", "junit", "github",
// "policyreport"; nullopt for anything else.
std::optional<AuditFormat> ParseAuditFormat(std::string_view name);
// True for the formats that report where a finding is (file:line:column).
bool LocatesFindings(AuditFormat f);

// --fail-on: the least severe finding (not suppressed) that makes the audit exit 1. "error"
// (alias "deny", the default), "warning" (alias "warn": anything the patch would fix), "info";
// nullopt for anything else.
std::optional<Severity> ParseFailOn(std::string_view name);

// Which report API -o policyreport writes: wgpolicyk8s.io/v1alpha2 PolicyReport and
// ClusterPolicyReport (Kyverno, Policy Reporter), or openreports.io/v1alpha1 Report and
// ClusterReport (their successor).
enum class ReportApi { kWgPolicy, kOpenReports };

struct AuditOptions {
  std::vector<std::string> paths;  // files, directories, "-" for stdin
  AuditFormat output = AuditFormat::kTable;
  Severity fail_on = Severity::kError;
  int jobs = 0;            // threads parsing and evaluating; 0: one per CPU
  Exemptions ignore = {};  // --ignore ID: reported as suppressed, never counted
  ReportApi report_api = ReportApi::kWgPolicy;
  // --docs-url: where this version's docs/checks.md is published (an absolute http(s) URL);
  // SARIF rules then link to their sections (helpUri URL#id). "": the rules' help names the file.
  std::string docs_url = {};
  // --max-file-bytes: a file, or stdin, holding more is an error (that path only; the others are
  // still read). Default: 256 MiB.
  size_t max_file_bytes = io::kDefaultMaxManifestBytes;
  // --observations FILE: ShmProfiles (`kubectl get shmprofiles -A -o yaml`), each workload sized
  // as the webhook would size its next pods. nullptr: from the formula alone.
  const ObservationIndex* observations = nullptr;
  // --policy-mode: what `shmguard policy export`'s admission policies would do instead of the
  // webhook (EvaluateOptions::policy_mode).
  bool policy_mode = false;
};

// Evaluates everything under `o.paths` (stdin from `in`), calling `each` with every document and
// the records it produced, in input order, on the calling thread; `o.jobs` threads parse and
// evaluate (1: all on the calling thread; 0: one per CPU). An unreadable path gives one "error"
// record with an empty document. With JsonLists::kItemByItem, `each` gets documents without text
// or object. `o.ignore`: checks exempted everywhere; `locate`: fill each finding's line and
// column.
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
