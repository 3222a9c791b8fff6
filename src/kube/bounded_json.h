// ParseBounded: an API server's answer parsed only when it holds no more JSON values than a
// bound, counted first without building anything.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace shmguard::kube {

// The JSON values (objects, arrays, strings, numbers...) `text` holds, parsed; a discarded value
// when it is not JSON, and nullopt when it holds more than `max_values` (parsing stops there, so
// a small answer of millions of empty items never becomes millions of objects in memory).
std::optional<nlohmann::json> ParseBounded(std::string_view text, size_t max_values);

}  // namespace shmguard::kube
