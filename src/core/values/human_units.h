// Numbers for people, for the words the edges write: a byte count, a factor in millionths, a count
// with its noun.
#pragma once

#include <cstdint>
#include <string>

namespace shmguard {

// A byte count for people: the exact quantity (FormatBytes) when it is a whole MiB or smaller
// than 1Mi ("12Gi", "999", "1k"), else MiB with one decimal ("147.1Mi").
std::string HumanBytes(int64_t bytes);

// A factor in millionths as a decimal: 1200000 -> "1.2", 500000 -> "0.5".
std::string FormatPpm(int64_t ppm);

// A count and its noun: (1, "proc") -> "1 proc", (4, "proc") -> "4 procs", and with `plural`
// given, (2, "process", "processes") -> "2 processes".
std::string Plural(int64_t n, const char* word, const char* plural = nullptr);

}  // namespace shmguard
