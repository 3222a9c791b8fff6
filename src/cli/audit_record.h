// What the audit says of one object: the core's Evaluation as typed records (verdict, reasons,
// patch, the pods' sizes), one per object or one per Compose service, and the counts over an
// audit. Printing them is audit_output's; reading files into objects is audit_command's.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shmguard/evaluation.h"
#include "shmguard/json_patch.h"
#include "shmguard/pod_templates.h"
#include "shmguard/policy.h"

namespace shmguard::cli {

// What the audit says of an object: the core's verdicts, and kError for input that could not
// be read (an unreadable file, a document that does not parse).
enum class AuditVerdict { kOk, kPatch, kDeny, kSkip, kError };
inline constexpr AuditVerdict kAuditVerdicts[] = {AuditVerdict::kOk, AuditVerdict::kPatch, AuditVerdict::kDeny,
                                                  AuditVerdict::kSkip, AuditVerdict::kError};
const char* AuditVerdictName(AuditVerdict v);  // "ok", "patch", "deny", "skip", "error"
AuditVerdict AuditVerdictOf(Verdict v);

// One pod spec of an object.
struct AuditPod {
  std::string path, label;  // "/spec/template/spec", "pod"
  Verdict verdict = Verdict::kSkip;
  std::string current_shm;
  int64_t required_bytes = 0;  // 0: not sized
  bool estimated = false;      // sized without DataLoader annotations
  std::optional<int64_t> memory_limit_bytes;
  bool operator==(const AuditPod&) const = default;
};

// One object of the input and its verdict.
struct AuditRecord {
  std::string file;
  int document = 0;         // 0-based document index in the file
  std::optional<int> item;  // index inside a List
  int line = 1;             // line where the document starts
  std::string api_version, kind, namespace_name, name;
  std::string service;  // a Compose service: each is a record of its own
  AuditVerdict verdict = AuditVerdict::kError;
  bool workload = false;  // false: a non-workload document (Service, ConfigMap...)
  std::vector<std::string> reasons, warnings, changes;
  std::vector<AuditPod> pods;
  JsonPatch patch;  // relative to the document or List item
  std::string current_shm;
  int64_t required_bytes = 0;
  std::optional<int64_t> memory_limit_bytes;
};

// Counts over a whole audit, for the summary line/object and the exit code.
struct AuditSummary {
  int files = 0, documents = 0, objects = 0, non_workloads = 0;
  std::map<AuditVerdict, int> verdicts;
  std::map<std::string, int> skipped_kinds;  // non-workload kinds seen
  void Add(const AuditRecord& r);
  int Count(AuditVerdict v) const;
};

// Evaluates `object` (TrainJobs against `runtimes`) with every reason worded: one record, or one
// per pod when its pods are separate applications (a Compose file's services). Never fails, as
// Evaluate never does: a malformed field is a kDeny naming it, a non-workload a kSkip saying why.
std::vector<AuditRecord> RecordsOf(const nlohmann::json& object, const Policy& policy, const RuntimeCatalog& runtimes);

}  // namespace shmguard::cli
