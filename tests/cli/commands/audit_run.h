// RunAudit called as the command line calls it, for the audit command's tests.
#pragma once

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands/audit_command.h"

namespace shmguard::cli::audit_test {

struct Run {
  ExitCode code;
  std::string out, err;
};

// `shmguard audit PATHS -o OUTPUT --fail-on FAIL_ON`, with stdin_text as its standard input.
inline Run Audit(std::vector<std::string> paths, const std::string& output = "json",
                 const std::string& fail_on = "error", const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  auto format = ParseAuditFormat(output);
  REQUIRE(format.has_value());
  auto severity = ParseFailOn(fail_on);
  REQUIRE(severity.has_value());
  AuditOptions o{std::move(paths), *format, *severity};
  ExitCode code = RunAudit(o, Policy{}, in, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace shmguard::cli::audit_test
