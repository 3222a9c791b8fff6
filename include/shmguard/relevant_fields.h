// The parts of a Kubernetes object that Evaluate never reads, so that a parser may drop them
// while building the JSON tree (the server and the audit do, for speed). Dropping them must not
// change any Evaluation: tests/io/fast_json_test.cc checks that over all test data.
// Keep this in step with pod_facts.cc, shm_mount.cc, shm_patch.cc, pod_templates.cc and
// shm_profile.cc (ownerReferences and labels name the workload a pod is learned under).
#pragma once

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>

namespace shmguard {

// Annotation keys the evaluation reads: shmguard.io/*. An annotations object is still kept
// (possibly empty) because the patch adds to it rather than creating it.
inline bool IsRelevantAnnotation(std::string_view key) { return key.rfind("shmguard.io/", 0) == 0; }

// Environment variables the evaluation reads: PET_NPROC_PER_NODE, PET_NNODES (torchrun) and
// NCCL_SHM_DISABLE, NCCL_P2P_DISABLE. Entries of an "env" list are never patched, so dropping
// the others keeps every pointer valid.
inline bool IsRelevantEnvVar(std::string_view name) {
  return name.rfind("PET_", 0) == 0 || name == "NCCL_SHM_DISABLE" || name == "NCCL_P2P_DISABLE";
}

// Object members that are never read anywhere in an object: bookkeeping the API server adds,
// scheduling and lifecycle settings, images, the insides of volume sources (only a
// source's type, its key, is read). None of these names is a key the evaluation looks up at
// any depth. Every key of every object is looked up here, so the list is grouped by length and
// a key is compared only with the names of its length, by first byte before any memcmp.
constexpr bool ShorterFirst(std::string_view a, std::string_view b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// clang-format off
inline constexpr std::string_view kIgnoredMembers[] = {
    "tty", "uid", "image", "ports", "stdin", "envFrom", "sources", "subPath", "affinity",
    "hostname", "nodeName", "priority", "readOnly", "claimName", "dnsConfig", "dnsPolicy",
    "lifecycle", "stdinOnce", "subdomain", "finalizers", "generation", "workingDir", "defaultMode",
    "subPathExpr", "tolerations", "nodeSelector", "startupProbe", "livenessProbe", "managedFields",
    "schedulerName", "readinessGates", "readinessProbe", "serviceAccount", "imagePullPolicy",
    "resourceVersion", "imagePullSecrets", "mountPropagation",
    "preemptionPolicy", "runtimeClassName", "creationTimestamp", "priorityClassName",
    "setHostnameAsFQDN", "enableServiceLinks", "serviceAccountName", "shareProcessNamespace",
    "terminationMessagePath", "terminationMessagePolicy", "topologySpreadConstraints",
    "automountServiceAccountToken", "terminationGracePeriodSeconds"};
// clang-format on
static_assert(std::is_sorted(std::begin(kIgnoredMembers), std::end(kIgnoredMembers), ShorterFirst));

// For each key length, the members of that length: [begin, end) in kIgnoredMembers.
struct IgnoredRange {
  unsigned char begin = 0, end = 0;
};
inline constexpr auto kIgnoredByLength = [] {
  std::array<IgnoredRange, 32> ranges{};
  for (size_t i = 0; i < std::size(kIgnoredMembers); ++i) {
    IgnoredRange& r = ranges[kIgnoredMembers[i].size()];  // a longer name fails to compile here
    if (r.end == 0) r.begin = static_cast<unsigned char>(i);
    r.end = static_cast<unsigned char>(i + 1);
  }
  return ranges;
}();

inline bool IsIgnoredMember(std::string_view key) {
  if (key.empty() || key.size() >= kIgnoredByLength.size()) return false;
  const IgnoredRange r = kIgnoredByLength[key.size()];
  for (unsigned i = r.begin; i < r.end; ++i) {
    if (kIgnoredMembers[i][0] == key[0] && kIgnoredMembers[i] == key) return true;
  }
  return false;
}

// Members of an object's root that are never read ("status" of a Pod, a JobSet...).
inline bool IsIgnoredRootMember(std::string_view key) { return key == "status"; }

// Where a value sits, for a parser applying the rules above while it builds the tree: an
// object's root, a List's items, an annotations mapping, an env list, or anywhere else.
enum class PruneContext { kOther, kRoot, kItems, kAnnotations, kEnv };

// Whether the member `key` of a mapping in `ctx` is kept.
inline bool KeepMember(PruneContext ctx, std::string_view key) {
  switch (ctx) {
    case PruneContext::kAnnotations: return IsRelevantAnnotation(key);
    case PruneContext::kRoot: return !IsIgnoredRootMember(key) && !IsIgnoredMember(key);
    default: return !IsIgnoredMember(key);
  }
}

// The context of the value of member `key` of a mapping in `parent`.
inline PruneContext MemberContext(PruneContext parent, std::string_view key) {
  if (parent == PruneContext::kRoot && key == "items") return PruneContext::kItems;  // a List's objects
  if (key == "annotations") return PruneContext::kAnnotations;
  if (key == "env") return PruneContext::kEnv;
  return PruneContext::kOther;
}

// The context of the items of a list in `parent`.
inline PruneContext ItemContext(PruneContext parent) {
  return parent == PruneContext::kItems ? PruneContext::kRoot : PruneContext::kOther;
}

}  // namespace shmguard
