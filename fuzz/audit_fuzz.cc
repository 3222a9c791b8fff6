// libFuzzer target: bytes as a manifest document through the whole audit (YAML or JSON parse,
// evaluation, all four output formats). Any patch the audit reports must apply to its object,
// and the pruned parse (what the audit and the webhook use) must decide exactly as the full one.
#include <cstdlib>
#include <sstream>
#include <vector>

#include "cli/audit_command.h"

namespace {

// Pruning drops only what the evaluation never reads (shmguard/relevant_fields.h): the pruned
// parse must give the records of the full one (`full`, from CollectAudit). Parse errors may be
// worded differently by the two JSON parsers, so an error record only has to be an error in both.
void CheckPrunedDecidesAsFull(const std::vector<shmguard::cli::AuditRecord>& full, const std::string& text,
                              const shmguard::Policy& policy) {
  std::vector<shmguard::cli::AuditRecord> pruned;
  std::istringstream in(text);
  shmguard::cli::StreamAudit(
      {"-"}, policy, in, shmguard::io::Fidelity::kPruned, 1,
      [&](const shmguard::io::Document&, std::vector<shmguard::cli::AuditRecord>&& records) {
        for (auto& r : records) pruned.push_back(std::move(r));
      },
      {}, true);  // located, as CollectAudit's: a List item's places must agree
  if (full.size() != pruned.size()) std::abort();
  for (size_t i = 0; i < full.size(); ++i) {
    const auto& a = full[i];
    const auto& b = pruned[i];
    if (a.verdict != b.verdict) std::abort();
    if (a.verdict == shmguard::cli::AuditVerdict::kError) continue;
    if (a.findings != b.findings || a.changes != b.changes || a.patch != b.patch ||
        a.required_bytes != b.required_bytes || a.memory_limit_bytes != b.memory_limit_bytes ||
        a.current_shm != b.current_shm || a.pods != b.pods || a.kind != b.kind || a.name != b.name ||
        a.namespace_name != b.namespace_name) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  static const shmguard::Policy policy;
  for (const char* output : {"json", "yaml", "table", "patched", "sarif", "junit", "github", "policyreport"}) {
    std::istringstream in(text);
    std::ostringstream out, err;
    shmguard::cli::AuditOptions o;
    o.paths = {"-"};
    o.output = *shmguard::cli::ParseAuditFormat(output);
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
      if (d.index == r.document && d.object) (void)d.object->patch(r.patch.ToJson());  // must apply
    }
  }
  CheckPrunedDecidesAsFull(result.records, text, policy);
  return 0;
}
