// The words of findings, for every edge that speaks — the audit's outputs, the webhook's
// warnings and denials, `shmguard plan`: each check's row in the catalogue (src/core/
// check_catalogue.cc) words its findings; these label them by pod and pick them by severity.
// The one test that asserts a check's words is tests/core/checks/check_catalogue_test.cc.
#pragma once

#include <string>
#include <vector>

#include "core/checks/checks.h"
#include "core/plan/shm_plan.h"
#include "core/verdict/evaluation.h"

namespace shmguard::io {

// The finding in words (its check's row words it), e.g. "memory limit 16Gi (sum of container limits) is below the 20Gi
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
// `server_terms` words an inference server's segments (ServerTermsText), when the plan has any.
std::vector<std::string> ExplainPlan(const ShmPlan& plan, const SizingConstants& k, std::string_view server_terms = {});

}  // namespace shmguard::io
