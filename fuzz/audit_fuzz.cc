// libFuzzer target: bytes as a manifest document through the whole audit (YAML or JSON parse,
// evaluation, every output format). Any patch the audit reports must apply to its object, and a
// JSON List read item by item (every format but patched) must decide exactly as read whole.
#include <cstdlib>
#include <sstream>
#include <vector>

#include "cli/commands/audit_command.h"

namespace {

// The records of a List read item by item must be those of the List read whole (`full`, from
// CollectAudit), located at the same places. A List broken around its items fails whole either
// way; an error record only has to be an error in both.
void CheckItemsDecideAsWhole(const std::vector<shmguard::cli::AuditRecord>& full, const std::string& text,
                             const shmguard::Policy& policy) {
  std::vector<shmguard::cli::AuditRecord> items;
  std::istringstream in(text);
  shmguard::cli::AuditOptions o;
  o.paths = {"-"};
  o.jobs = 1;
  shmguard::cli::StreamAudit(o, policy, in, shmguard::io::JsonLists::kItemByItem, true,
                             [&](const shmguard::io::Document&, std::vector<shmguard::cli::AuditRecord>&& records) {
                               for (auto& r : records) items.push_back(std::move(r));
                             });
  if (full.size() != items.size()) std::abort();
  for (size_t i = 0; i < full.size(); ++i) {
    const auto& a = full[i];
    const auto& b = items[i];
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
      if (d.index == r.document && d.object) (void)d.object->ToJson().patch(r.patch.ToJson());  // must apply
    }
  }
  CheckItemsDecideAsWhole(result.records, text, policy);
  return 0;
}
