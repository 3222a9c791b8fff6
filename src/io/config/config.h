// Loading the policy (README "Policy") from YAML. Strict: an unknown key, a wrong type, an invalid
// glob or an out-of-range number fails with the key and its line, so a typo never silently
// becomes a default.
#pragma once

#include <string>
#include <string_view>

#include "core/policy/policy.h"
#include "core/values/result.h"
#include "io/files/file_text.h"

namespace shmguard::io {

// Parses policy YAML; `name` is used in error locations ("policy.yaml:12"). Keys left out keep
// the Policy defaults. Fails with kInvalidInput, where = "name:line", message naming the key
// ("sizing.safety: must be a decimal number >= 1, got \"high\"").
Result<Policy> ParsePolicy(std::string_view text, const std::string& name);

// Reads and parses `path`. Fails with kIo when it cannot be read.
// `readable`: kRegularFiles for what a server re-reads on its own (a FIFO or a device there is
// an error, never a wait); the CLI takes pipes too (--config <(...)). At most kMaxPolicyBytes.
Result<Policy> LoadPolicy(const std::string& path, Readable readable = Readable::kFilesAndPipes);

}  // namespace shmguard::io
