// A checker of JSON values against the JSON schemas of Kubernetes kinds (draft-04, internal
// $refs only, as the corpus ships them): the keywords those schemas use — type, properties,
// additionalProperties, required, items, anyOf, enum, pattern, minimum/maximum, min/max
// Length/Items/Properties — and x-kubernetes-preserve-unknown-fields. Test-only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shmguard::test {

// The problems of `value` against `schema`, each "pointer: what is wrong"; empty when it fits.
std::vector<std::string> CheckSchema(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace shmguard::test
