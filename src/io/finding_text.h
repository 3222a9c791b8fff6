// The words of findings (shmguard/checks.h): one sentence per check, written from the finding's
// numbers and values, for every edge that speaks — the audit's outputs, the webhook's warnings
// and denials, `shmguard plan`. The one place each check is put in words (its test is
// tests/io/finding_text_test.cc).
#pragma once

#include <string>
#include <vector>

#include "shmguard/checks.h"
#include "shmguard/evaluation.h"
#include "shmguard/shm_plan.h"

namespace shmguard::io {

// The finding in words, e.g. "memory limit 16Gi (sum of container limits) is below the 20Gi
// dshm needs: raise the limit or lower num-workers/prefetch-factor/batch size".
std::string FindingText(const Finding& f);

// FindingText prefixed with the pod's label ("replicatedJob workers: ...") when `prefix_pod`
// and the finding belongs to a pod.
std::string FindingLine(const Finding& f, bool prefix_pod);

// The words of every finding of `ev` that is not suppressed and is at least `min` severe,
// labelled by pod when the workload has more than one.
std::vector<std::string> FindingLines(const Evaluation& ev, Severity min);

// The arithmetic of a plan, one line per term and step, for a person to check (`shmguard plan`),
// e.g. "DataLoader: 4 procs × (8 workers × 2 prefetch + 2) × 160Mi = 11520Mi".
// REQUIRES: `plan` came from PlanShm with the same constants `k`.
std::vector<std::string> ExplainPlan(const ShmPlan& plan, const SizingConstants& k);

}  // namespace shmguard::io
