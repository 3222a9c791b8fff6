// `shmguard audit`: the webhook's verdicts over manifest files, offline (README "shmguard audit"). Reads files,
// directories and stdin; evaluates every object (and every item of a List); keeps going past
// documents that do not parse. Documents are parsed and evaluated on a few threads and printed
// in input order as they finish, so memory stays flat however long the stream.
#pragma once

#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/exit_code.h"
#include "io/manifests.h"
#include "shmguard/evaluation.h"
#include "shmguard/json_patch.h"
#include "shmguard/policy.h"

namespace shmguard::cli {

enum class AuditFormat { kTable, kJson, kYaml, kPatched };
// By the names --output takes: "table", "json", "yaml", "patched"; nullopt for anything else.
std::optional<AuditFormat> ParseAuditFormat(std::string_view name);

// The verdict from which the audit exits 1: kWarn, anything to patch; kDeny, a denial.
enum class FailOn { kWarn, kDeny };

struct AuditOptions {
  std::vector<std::string> paths;  // files, directories, "-" for stdin
  AuditFormat output = AuditFormat::kTable;
  FailOn fail_on = FailOn::kDeny;
  int jobs = 0;  // threads parsing and evaluating; 0: one per CPU
};

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

// Evaluates everything under `paths` (stdin from `in`), calling `each` with every document and
// the records it produced, in input order, on the calling thread; `jobs` threads parse and
// evaluate (1: all on the calling thread). An unreadable path gives one "error" record with an
// empty document. kPruned is faster, and `each` then gets documents without text or object.
AuditSummary StreamAudit(const std::vector<std::string>& paths, const Policy& policy, std::istream& in,
                         io::Fidelity fidelity, unsigned jobs,
                         const std::function<void(const io::Document&, std::vector<AuditRecord>&&)>& each);

struct AuditResult {
  std::vector<io::Document> documents;
  std::vector<AuditRecord> records;
  AuditSummary summary;
};

// StreamAudit with kFull, everything kept (tests, small inputs).
AuditResult CollectAudit(const std::vector<std::string>& paths, const Policy& policy, std::istream& in);

// The whole command: stream, print in the chosen format, and return kUsage when any input was
// unreadable, else kFindings when a verdict reaches --fail-on, else kOk.
ExitCode RunAudit(const AuditOptions& options, const Policy& policy, std::istream& in, std::ostream& out,
                  std::ostream& err);

}  // namespace shmguard::cli
