// Values as Kubernetes objects and shmguard.io/* annotations write them, read with the field
// they came from named on error: a count, a count annotation, a quantity, a size. Shared by
// every reader of fields (pod_facts, launch_facts, shm_mount).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/values/json_node.h"
#include "core/values/result.h"

namespace shmguard {

// Pieces of a field's pointer joined, made only when an error names the field.
std::string Joined(std::initializer_list<std::string_view> pieces);

// shmguard.io/* annotations by key.
using Annotations = std::map<std::string, JsonNode, std::less<>>;

// A count as shmguard.io/* annotations, the kinds' fields and torchrun's flags write it: decimal
// digits only ("8", "08"; not "+8", "8.0" or " 8"), at most 18 of them; nullopt otherwise.
std::optional<int64_t> ParseCount(std::string_view s);

// An integer annotation in [min, max]; nullopt when absent. Fails with kInvalidInput naming the
// annotation when the value is not a quoted decimal integer in range ("8", not 8 or "eight").
Result<std::optional<int64_t>> ReadCountAnnotation(const Annotations& a, const std::string& key, int64_t min,
                                                   int64_t max);

// A quantity read from a Kubernetes object field: a string (spaces trimmed, as the API server's
// JSON decoder does), a number, or null or absent (0). Fails with kInvalidInput naming the
// field's pointer, given in pieces ({container, "/resources/limits/memory"}) that are joined only
// for an error.
Result<int64_t> ReadQuantityField(JsonNode value, std::initializer_list<std::string_view> pointer);

// ReadQuantityField for a size (a memory limit or request, a sizeLimit): also fails with
// kInvalidInput naming the field when it is negative, which the API server refuses and which
// would otherwise read as "no limit".
Result<int64_t> ReadSizeField(JsonNode value, std::initializer_list<std::string_view> pointer);

}  // namespace shmguard
