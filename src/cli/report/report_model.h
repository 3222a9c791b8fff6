// What `shmguard report` shows: the audit's records grouped as an operator reads them, namespace ->
// workload -> pod template (its containers), each with what it has at /dev/shm, the plan and its
// terms, the learned peak, the memory limit, the verdict and the patch. One JSON value, which
// `--json` writes as it is and report_html renders; the browser test reads both.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/outputs/audit_record.h"

namespace shmguard::cli {

// The report of `records` (in input order). Records that are not workloads, and unreadable
// input, are counted in "summary" and not listed. Records of one workload (the same namespace and
// ShmProfile key: a Deployment and its pods from `kubectl get`) are one workload; its pod
// templates that read alike (label, containers, /dev/shm, size, verdict) are one row with the
// count of objects. Namespaces and workloads are sorted by name. The shape:
//   {"namespaces": [{"name", "workloads": [{"workload", "kind", "name", "verdict", "objects",
//     "patch", "command", "pods": [{"label", "containers", "objects", "verdict", "current",
//     "currentBytes", "requiredBytes", "estimated", "memoryLimitBytes", "plan", "learned",
//     "findings": [{"id", "severity", "message"}]}]}]}],
//    "summary": {"files", "objects", "workloads", "podTemplates", "errors", "verdicts": {...}}}
// Bytes are integers; absent numbers are null.
nlohmann::json ReportJson(const std::vector<AuditRecord>& records, const AuditSummary& summary);

// How much a verdict (its name in the report) asks of the operator: deny 4, error 3, patch 2,
// ok 1, skip 0. A workload's verdict is its records' highest; the page sorts by it.
int VerdictRank(std::string_view name);

// The report as one self-contained HTML page: no network (a Content-Security-Policy that allows
// none), inline style, inline SVG bars, and a script that filters by namespace and sorts the
// workloads. Every text of the input is escaped.
std::string ReportHtml(const nlohmann::json& report);

}  // namespace shmguard::cli
