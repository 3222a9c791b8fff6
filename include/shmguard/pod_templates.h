// Workload discovery: where the pod specs of an object are, which shmguard.io/* annotations apply
// to each, and how many pods run each one together. Handles Pod and JobSet
// jobset.x-k8s.io/v1alpha2 (the kinds the webhook patches) plus the built-in controllers whose
// templates an offline audit can fix (Job, CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shmguard/json_node.h"

#include "shmguard/result.h"

namespace shmguard {

inline constexpr const char* kAnnotationPrefix = "shmguard.io/";
inline constexpr const char* kNumWorkersAnnotation = "shmguard.io/num-workers";
inline constexpr const char* kPrefetchFactorAnnotation = "shmguard.io/prefetch-factor";
inline constexpr const char* kBatchBytesAnnotation = "shmguard.io/batch-bytes";
inline constexpr const char* kProcsPerPodAnnotation = "shmguard.io/procs-per-pod";
inline constexpr const char* kNodesAnnotation = "shmguard.io/nodes";
inline constexpr const char* kModeAnnotation = "shmguard.io/mode";
inline constexpr const char* kPlanAnnotation = "shmguard.io/plan";

// shmguard.io/* annotations by key.
using Annotations = std::map<std::string, JsonNode, std::less<>>;

struct PodTemplate {
  std::string label;             // for messages: "pod", "replicatedJob workers"
  std::string spec_pointer;      // RFC 6901 pointer of the PodSpec: "/spec", ".../template/spec"
  std::string metadata_pointer;  // pointer of the pod metadata: "/metadata", ".../template/metadata"
  JsonNode spec;      // the PodSpec object
  JsonNode metadata;  // absent when the template has no metadata
  // Effective shmguard.io/* annotations: the workload's, overridden by the pod template's.
  // Values are kept as JSON (an unquoted YAML number stays a number) so the plan can say
  // "quote it" rather than guessing.
  Annotations annotations;
  // Pods that run this template at once, from the workload's shape (JobSet replicas ×
  // parallelism, Job parallelism, StatefulSet replicas); 1 for a Pod. A hint for multi-node NCCL.
  int64_t pods_together = 1;
};

struct Workload {
  std::string api_version, kind, namespace_name, name;  // name falls back to generateName
  bool is_pod = false;  // a Pod carries its own annotations; templates get them copied
  std::vector<PodTemplate> templates;
};

// Finds every pod spec in `object`.
// Fails with kUnsupportedKind when the object is not a kind listed above (the message names it),
// and with kInvalidInput, naming the JSON pointer, when a field on the way has the wrong type
// (e.g. "spec.containers" written as a mapping, "replicatedJobs" not a list).
// REQUIRES: `object` outlives the result (it holds pointers into it).
Result<Workload> FindPodTemplates(JsonNode object);

// True when the kind is one the admission webhook patches: Pod (v1) or JobSet (v1alpha2).
bool IsAdmissionKind(const std::string& api_version, const std::string& kind);

}  // namespace shmguard
