// The words of the webhook's answers: a decision's findings as AdmissionReview warnings, within
// the API server's limits, and as the denial's status.message (docs/sources.md §8).
#pragma once

#include <string>
#include <vector>

#include "core/verdict/admission.h"

namespace shmguard::server {

// Makes warnings safe for the API server: each at most 120 bytes (longer ones are split at
// spaces into several), duplicates dropped, at most 4000 bytes in all (then one closing warning
// says how many were left out). Every warning starts with "shmguard: ".
std::vector<std::string> FitWarnings(const std::vector<std::string>& warnings);

// The warnings of an allowed decision: its findings in words, each prefixed with its pod's label
// when the workload has several pods, fitted (FitWarnings).
std::vector<std::string> DecisionWarnings(const Decision& d);

// status.message of a denial: "shmguard denied KIND NAMESPACE/NAME: " and every finding in words,
// separated by "; ".
std::string DenialMessage(const Decision& d, const std::string& kind, const std::string& namespace_name,
                          const std::string& name);

}  // namespace shmguard::server
