// What `shmguard audit` is asked for (audit_command.h reads it from the flags): the paths, the
// output format, what fails the run, the exemptions and what the audit is sized with. The
// outputs (audit_output.h) read it too, so it stands below both.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checks/checks.h"
#include "core/plan/shm_profile.h"
#include "core/verdict/evaluation.h"
#include "io/files/input_limits.h"

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

}  // namespace shmguard::cli
