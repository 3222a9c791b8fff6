// The four renderings of an audit, each streaming: a table for people, JSON and YAML records
// for machines, and the manifests with every patch applied (other documents byte for byte).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/audit_command.h"

namespace shmguard::cli {

class AuditPrinter {
 public:
  virtual ~AuditPrinter() = default;
  // One document and the records it produced, in input order.
  virtual void Document(const io::Document& doc, const std::vector<AuditRecord>& records) = 0;
  // After the last document.
  virtual void Finish(const AuditSummary& summary) = 0;
};

// The JSON form is {"records": [...], "summary": {...}} as documented in the README.
std::unique_ptr<AuditPrinter> MakeAuditPrinter(AuditFormat format, std::ostream& out);

// A record as the json and yaml outputs show it; `with_patch`: with its patch as a tree (the
// json output writes the patch's text instead).
nlohmann::json RecordToJson(const AuditRecord& r, bool with_patch = true);
nlohmann::json SummaryToJson(const AuditSummary& s);

}  // namespace shmguard::cli
