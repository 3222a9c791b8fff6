// The four renderings of an audit: a table for people, JSON and YAML records for machines, and
// the manifests with every patch applied (other documents byte for byte).
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/audit_command.h"

namespace shmguard::cli {

// {"records": [...], "summary": {...}} as documented in README (audit section).
nlohmann::json AuditToJson(const AuditResult& result);

// REQUIRES: format is table, json, yaml or patched.
void PrintAudit(const AuditResult& result, const std::string& format, std::ostream& out);

}  // namespace shmguard::cli
