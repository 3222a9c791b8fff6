// The words several checks' findings share, and those that take more than an expression: what
// the catalogue's rows (check_catalogue.cc) put a finding's numbers and values into. Internal to
// the core.
#pragma once

#include <string>
#include <string_view>

#include "core/checks/checks.h"

namespace shmguard::checks {

// A byte number of `f` as a quantity: "1Gi".
std::string Bytes(const Finding& f, std::string_view name);
// "a TrainJob", "an InferenceService": the finding's kind with its article.
std::string AKind(const Finding& f);
// "the 1Gi floor (NCCL shm and base for 2 procs = 1Gi, at least the 1Gi minimum)".
std::string Floor(const Finding& f);
// The advice an estimate ends with.
inline constexpr const char* kExact = "; set shmguard.io/num-workers and shmguard.io/batch-bytes for an exact size";

// shm-plan: the size and each term of its arithmetic.
std::string PlanWords(const Finding& f);
// sized-from-observation: the learned size against the formula.
std::string ObservedWords(const Finding& f);
// shm-over-memory-limit.
std::string OverMemoryLimitWords(const Finding& f);
// shm-below-need.
std::string BelowNeedWords(const Finding& f);
// Where a TrainJob's pod annotations go, by the Trainer API (`api`) it uses.
std::string TrainjobWhere(const std::string& api);
// procs-gpus-mismatch.
std::string ProcsGpusWords(const Finding& f);

}  // namespace shmguard::checks
