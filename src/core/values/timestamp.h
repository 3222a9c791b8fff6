// Times as Kubernetes writes them (metav1.Time: RFC 3339 in UTC, whole seconds; the agent's
// ShmProfiles the same), read as seconds since the epoch.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace shmguard {

// Seconds since the epoch of an RFC 3339 UTC time ("2026-11-27T12:00:00Z", fractions of a second
// ignored); nullopt for any other text.
std::optional<int64_t> ParseRfc3339Utc(std::string_view text);

}  // namespace shmguard
