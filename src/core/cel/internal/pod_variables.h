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

// The first of them: the namespace rule (policy.cc MatchNamespace) and what it decides — Pod
// Security, IPC_LOCK, hostIPC, annotations required, enforcement, and the checks exempted.
CelVariables NamespaceVariables();

// What the resize policies read after NamespaceVariables (verdict/resize.cc EvaluateResize): the
// memory limit and the /dev/shm of the pod before (oldObject) and after (object) the resize,
// whether the resize made them worse, whether /dev/shm still fits, and the least limit that holds
// it. Reads maxFractionPpm of the policy's values.
CelVariables ResizeVariables();

// Pod `root`'s memory limit in bytes, as ContainerVariables' memoryLimit (pod_facts.cc
// ReadPodFacts), in one expression: -1 when a container has none.
std::string MemoryLimitOf(const std::string& root);

}  // namespace shmguard::cel
