// The files a command reads before its work: the policy (--config) and the ShmProfiles
// (--observations), each with the command's name in its error.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "core/plan/shm_profile.h"
#include "core/policy/policy.h"

namespace shmguard::cli {

// The policy of `path`; the built-in defaults when it is empty. nullopt after
// "shmguard COMMAND: config ERROR" on `err`.
std::optional<Policy> LoadPolicyFor(const std::string& path, const char* command, std::ostream& err);

// The ShmProfiles of `path` into `index`: true, also when `path` is empty (nothing read). false
// after "shmguard COMMAND: --observations ERROR" on `err`.
bool LoadObservationsFor(const std::string& path, const char* command, ObservationIndex& index, std::ostream& err);

}  // namespace shmguard::cli
