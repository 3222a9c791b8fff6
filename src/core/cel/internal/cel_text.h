// CEL text: literals that hold any value exactly, and the expressions policy mode builds from
// the webhook's arithmetic (a quantity's bytes, the safety margin, a share of a limit, a size as
// FormatBytes writes it). Internal to the core.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/result.h"

namespace shmguard::cel {

// A CEL string literal holding `s` exactly: quotes and backslashes escaped, and every byte that
// is not printable ASCII as \xHH, so no value can end the literal or hold a raw newline.
std::string CelString(std::string_view s);
// A CEL list of string literals: ['a', 'b'].
std::string CelList(const std::vector<std::string>& items);
// A CEL list of expressions, as written.
std::string CelArray(const std::vector<std::string>& items);
std::string CelBool(bool b);
std::string CelInt(int64_t n);

// One anchored alternation of `globs` as RE2 ("" when there are none); an error naming the glob
// that GlobRegex refuses.
Result<std::string> RegexOf(const std::vector<std::string>& globs);

// A quantity field as whole bytes, rounded up as the webhook's ReadQuantityField rounds.
std::string Bytes(const std::string& field);
// The first string value of env NAME in app container `i` ('' when none), as ReadLaunchEnv reads
// it; NAME is one of LaunchEnvNames().
std::string Env(const char* name);
// The value of `--flag=V` or `--flag V` in launch line `l`, unquoted; '' when absent
// (launch_facts.cc FindFlag). `alternatives` ("a|b") are flags of the same `length`.
std::string Flag(const std::string& alternatives, size_t length);
// A count annotation's check: present and not a whole number within [min, max].
std::string CountBad(const char* key, int64_t min, int64_t max);
// A count annotation's value, 0 when it is absent or not a whole number.
std::string CountAnnotation(const char* key);
// `sum` × variables.safetyPpm rounded up, then up to a whole MiB (shm_plan.cc WithSafety).
std::string Safe(const std::string& sum);
// Mount `m` is at /dev/shm (shm_mount.h IsShmMountPath).
std::string ShmPath();
// ⌊limit × ppm / 10^6⌋ without overflow.
std::string Share(const std::string& limit, const std::string& ppm);
// A positive byte count `n` as the canonical quantity FormatBytes prints.
std::string QuantityText(const std::string& n);

}  // namespace shmguard::cel
