// Byte values as Docker and Compose read and write them (`docker run --shm-size`, Compose
// `shm_size` and `mem_limit`): go-units' RAMInBytes, not Kubernetes quantities (quantity.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/values/json_node.h"
#include "core/values/result.h"

namespace shmguard {

// Docker's default /dev/shm (docker run --shm-size; Compose shm_size): 64 MiB.
inline constexpr int64_t kDockerDefaultShmBytes = 64 * 1024 * 1024;

// A byte value as Docker and Compose read it (go-units RAMInBytes): decimal digits with optional
// ".digits" groups, an optional single space, an optional unit k, m, g, t or p (binary: 1024^n),
// an optional "i" and an optional "b", case-insensitive; the amount is read as a float, multiplied
// and truncated: "2gb" and "2GiB" are 2 GiB, "1.5g" is 1.5 GiB, "10" is 10 bytes. Fails with
// kInvalidInput at the JSON pointer `where` for anything else ("2 gigs", "-1g", "1.2.3g", "") and for values
// above 2^63-1 bytes.
Result<int64_t> ParseDockerBytes(std::string_view text, std::string_view where);

// A Compose byte field: an integer (bytes, not negative) or a string for ParseDockerBytes.
// Fails with kInvalidInput naming `pointer` otherwise.
Result<int64_t> ReadComposeBytes(JsonNode value, const std::string& pointer);

// `bytes` as Compose and `docker run --shm-size` read it back to the same count: the largest of
// p, t, g, m, k that divides it ("16g", "1536m"), else the plain number of bytes ("1000").
// REQUIRES: bytes >= 0.
std::string FormatDockerBytes(int64_t bytes);

}  // namespace shmguard
