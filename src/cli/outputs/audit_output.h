// The renderings of an audit, each streaming: a table for people, JSON and YAML records for
// machines, the manifests with every patch applied (other documents byte for byte), and the
// formats of the tools people already run — SARIF (code scanning), JUnit XML (CI test reports),
// GitHub workflow commands, PolicyReport objects (cluster dashboards).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/outputs/audit_options.h"
#include "cli/outputs/audit_record.h"
#include "io/files/manifests.h"

namespace shmguard::cli {

class AuditPrinter {
 public:
  virtual ~AuditPrinter() = default;
  // One document and the records it produced, in input order.
  virtual void Document(const io::Document& doc, const std::vector<AuditRecord>& records) = 0;
  // After the last document.
  virtual void Finish(const AuditSummary& summary) = 0;
};

// The printer of `options.output`. The JSON form is {"records": [...], "summary": {...}} as
// documented in the README.
std::unique_ptr<AuditPrinter> MakeAuditPrinter(const AuditOptions& options, std::ostream& out);

// The tools' formats, one file each (sarif_output.cc, junit_output.cc, github_output.cc,
// policy_report_output.cc).
std::unique_ptr<AuditPrinter> MakeSarifPrinter(std::ostream& out, const std::string& docs_url);
// JUnit fails a test case for each finding at or above `fail_on`, as the exit code does.
std::unique_ptr<AuditPrinter> MakeJunitPrinter(std::ostream& out, Severity fail_on);
std::unique_ptr<AuditPrinter> MakeGithubPrinter(std::ostream& out);
std::unique_ptr<AuditPrinter> MakePolicyReportPrinter(std::ostream& out, ReportApi api);

// A finding as the json and yaml outputs (and SARIF's properties) show it.
nlohmann::json FindingToJson(const AuditFinding& f, bool prefix_pod);

// A record as the json and yaml outputs show it; `with_patch`: with its patch as a tree (the
// json output writes the patch's text instead).
nlohmann::json RecordToJson(const AuditRecord& r, bool with_patch = true);
nlohmann::json SummaryToJson(const AuditSummary& s);

}  // namespace shmguard::cli
