// Globs as the policy writes them (namespace rules' match, rdmaResources): read as fnmatch(3)
// reads them with flags 0 (policy.cc matches with fnmatch), checked, and written as the RE2
// regular expression that matches the same names, for the exported CEL (admission_policy.h).
// A glob the two would read differently, or that RE2 refuses, is an error: the webhook and
// policy mode then never disagree on which namespace a rule covers.
#pragma once

#include <string>
#include <string_view>

#include "core/values/result.h"

namespace shmguard {

// The anchored RE2 expression of `glob`: "ml-*" -> "^ml-.*$", "team-[!ab]?" -> "^team-[^ab].$".
// `*` is any run of characters, `?` any one, `[...]` a bracket expression (`!` or `^` negates,
// a leading `]` is a member, ranges `a-z`, classes `[:alpha:]` and the like, `\x` a literal x),
// `\x` a literal x. Fails with kInvalidInput saying what is wrong for: a bracket expression left
// open (fnmatch would read its `[` as a literal, RE2 a class), a reversed range (`[z-a]`), an
// unknown class, collating elements (`[.a.]`, `[=a=]`), a trailing backslash, and any byte that
// is not printable ASCII (namespace and resource names are ASCII).
Result<std::string> GlobRegex(std::string_view glob);

}  // namespace shmguard
