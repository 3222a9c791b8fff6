// The CEL variables of policy mode's pod path, shared by the mutating and the validating policies
// (admission_policy.cc binds the policy's values ahead of them). Internal to the core.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace shmguard::cel {

// {name, expression}, in the order the policies list them.
using CelVariables = std::vector<std::pair<std::string, std::string>>;

// The variables, in order: each reads only the policy's values (ruleRegexes, gpuResources,
// safetyPpm, ...), the request's object and namespaceObject, and the variables before it. The
// first, `rule`, reads only ruleRegexes; the rule's values (ruleLevel, ...) come after it.
// Every expression is fixed text: the same for every policy.
CelVariables PodVariables();

}  // namespace shmguard::cel
