// The checks a shmguard.io/ignore annotation exempts, for Evaluate and EvaluateResize.
#pragma once

#include <string>
#include <vector>

#include "core/checks/checks.h"
#include "core/values/json_node.h"

namespace shmguard::verdict {

// The checks `value` names ("id,id"; spaces around IDs allowed). An unknown ID, or a value that
// is not a string, is an annotation-invalid warning at `pointer` in `findings`: a typo must not
// exempt nothing silently.
std::vector<Check> ReadIgnore(JsonNode value, const std::string& pointer, std::vector<Finding>& findings);

}  // namespace shmguard::verdict
