// What the audit says of one object: the core's Evaluation as typed records (verdict, findings
// with their places in the file, patch, the pods' sizes), one per object or one per Compose
// service, and the counts over an audit. Printing them is audit_output's; reading files into
// objects, and finding the places, is audit_command's.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/values/json_patch.h"
#include "core/verdict/evaluation.h"
#include "core/workloads/pod_templates.h"

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
  std::optional<int64_t> current_bytes;  // current_shm in bytes, where a number applies
  int64_t required_bytes = 0;            // 0: not sized
  bool estimated = false;                // sized without DataLoader annotations
  std::optional<int64_t> memory_limit_bytes;
  std::vector<std::string> containers;  // the names of the template's containers
  bool operator==(const AuditPod&) const = default;
};

// A finding and where it is in the input: the field at fault, or the nearest parent that is
// written (a missing field). 0: not located (the output does not need it, or no text to read).
struct AuditFinding {
  Finding finding;
  int line = 0, column = 0;  // 1-based
  bool operator==(const AuditFinding&) const = default;
};

// One object of the input and its verdict.
struct AuditRecord {
  std::string file;
  int document = 0;         // 0-based document index in the file
  std::optional<int> item;  // index inside a List
  int line = 1;             // line where the document starts
  std::string api_version, kind, namespace_name, name;
  std::string service;       // a Compose service: each is a record of its own
  std::string workload_key;  // what its pods' ShmProfile is kept under ("Deployment/serve"), "" if none
  AuditVerdict verdict = AuditVerdict::kError;
  bool workload = false;               // false: a non-workload document (Service, ConfigMap...)
  std::vector<AuditFinding> findings;  // the object's, then each pod's
  std::vector<std::string> changes;    // what the patch does, one line each
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
  std::map<std::string, int> checks;         // findings by check ID (suppressed ones included)
  int suppressed = 0;
  void Add(const AuditRecord& r);
  int Count(AuditVerdict v) const;
};

// Whether a record's findings name their pod: the record stands for several pods.
bool PrefixPods(const AuditRecord& r);

// What the record is about, for people: "service trainer" (Compose), "Pod ns/name", "Job name";
// "" for a document with no kind.
std::string ObjectName(const AuditRecord& r);

// The most severe finding of `r` that is not suppressed; nullopt when it has none.
std::optional<Severity> WorstSeverity(const AuditRecord& r);

// An input that could not be read at all (a file, a document that does not parse): one error
// record with a document-unreadable finding at `line` (0: unknown).
AuditRecord UnreadableRecord(const std::string& file, const Error& e, int line);

// Evaluates `object` with every finding (`eval`: the TrainJobs' runtimes, the caller's
// exempted checks, the observations; its detail is always kAll): one record, or one per pod when
// its pods are separate applications (a Compose file's services). Never fails, as Evaluate never
// does: a malformed field is an error finding naming it, a non-workload a kSkip saying why.
std::vector<AuditRecord> RecordsOf(JsonNode object, const Policy& policy, const EvaluateOptions& eval = {});

}  // namespace shmguard::cli
