// The catalogue's rows (check_catalogue.cc), for checks.cc's lookups; everything else reads them
// through Catalogue() and InfoOf() (core/checks/checks.h).
#pragma once

#include <array>
#include <cstddef>

#include "core/checks/checks.h"

namespace shmguard::checks {

inline constexpr size_t kCheckCount = static_cast<size_t>(Check::kDocumentUnreadable) + 1;

// One row per check, in the order of enum Check.
extern const std::array<CheckInfo, kCheckCount> kChecks;

}  // namespace shmguard::checks
