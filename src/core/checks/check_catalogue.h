// The catalogue's rows (check_catalogue.cc), for checks.cc's lookups; everything else reads them
// through Catalogue() and InfoOf() (shmguard/checks.h).
#pragma once

#include <array>
#include <cstddef>

#include "shmguard/checks/checks.h"

namespace shmguard {

inline constexpr size_t kCheckCount = static_cast<size_t>(Check::kDocumentUnreadable) + 1;

// One row per check, in the order of enum Check.
extern const std::array<CheckInfo, kCheckCount> kChecks;

}  // namespace shmguard
