// libFuzzer target: bytes as a manifest document through the whole audit (YAML or JSON parse,
// evaluation, all four output formats). Any patch the audit reports must apply to its object.
#include <cstdlib>
#include <sstream>

#include "cli/audit_command.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  static const shmguard::Policy policy;
  for (const char* output : {"json", "yaml", "table", "patched"}) {
    std::istringstream in(text);
    std::ostringstream out, err;
    shmguard::cli::AuditOptions o{{"-"}, output, "deny"};
    auto code = shmguard::cli::RunAudit(o, policy, in, out, err);
    if (code != shmguard::cli::ExitCode::kOk && code != shmguard::cli::ExitCode::kFindings &&
        code != shmguard::cli::ExitCode::kUsage) {
      std::abort();
    }
  }
  std::istringstream in(text);
  auto result = shmguard::cli::CollectAudit({"-"}, policy, in);
  for (const auto& r : result.records) {
    if (r.patch.empty() || r.item) continue;
    for (const auto& d : result.documents) {
      if (d.index == r.document && d.object) (void)d.object->patch(r.patch);  // must apply
    }
  }
  return 0;
}
