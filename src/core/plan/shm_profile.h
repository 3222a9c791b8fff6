// What shmguard has learned of a workload's /dev/shm from its running pods: the ShmProfile
// (shmguard.io/v1alpha1) the node agent writes and the webhook and the audit read. One profile per
// workload and namespace, keyed by the workload's top owner ("CronJob/nightly", "Deployment/serve")
// or by the shmguard.io/profile annotation ("profile/llm-ft"). No I/O: the agent and the webhook
// move the objects; this reads them, keys them and says what size they teach.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/json_node.h"
#include "core/values/result.h"
#include "core/values/timestamp.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

inline constexpr char kShmProfileApiVersion[] = "shmguard.io/v1alpha1";
inline constexpr char kShmProfileKind[] = "ShmProfile";

// One workload's observed /dev/shm.
struct ObservedShm {
  std::string namespace_name;
  std::string workload;       // "Job/train", "profile/llm-ft"
  int64_t peak_bytes = 0;     // the largest use any of its pods reached
  int64_t size_bytes = 0;     // the /dev/shm size the peak was reached in
  int64_t runs = 0;           // its pods followed to their end
  std::string last_observed;  // RFC 3339, when the peak or a run was last recorded
  std::string last_pod;       // the pod last recorded
};

// The workloads an object's pods may be kept under, the most specific first. A pod's (an object
// without kind is one: the items of a list of pods carry none):
// ["profile/<value>"] when it has the shmguard.io/profile annotation; else its controller's, the
// top owner first where the pod shows it — a ReplicaSet named after its Deployment (the name
// plus "-" and the pod's pod-template-hash label) gives ["Deployment/d", "ReplicaSet/rs"]; a Job
// gives ["JobSet/s", "Job/j"] with the jobset.sigs.k8s.io/jobset-name label, else
// ["CronJob/c", "Job/j"] when the Job's name is a CronJob's ("c-" and the scheduled minute,
// 8 or more digits); a StatefulSet gives ["LeaderWorkerSet/l", "StatefulSet/s"] with the
// leaderworkerset.sigs.k8s.io/name label; ["Pod/<name>"] without a controller. Any other object (a manifest: a Job, a
// CronJob, a PyTorchJob) is its own workload, ["Kind/name"], unless it or a pod template has
// the profile annotation. `profile`: the annotation's effective value when the caller knows it (a
// pod template's, which overrides its workload's); absent: the object's own. Empty for an object
// without a name.
std::vector<std::string> WorkloadCandidates(JsonNode object, JsonNode profile = {});

// The ShmProfile object's name for a workload: the kind in lower case, ".", the name
// ("job.train", "cronjob.nightly", "profile.llm-ft"): a DNS subdomain when the name is one.
std::string ProfileName(std::string_view workload);

// A ShmProfile object's content (a list's items carry no kind). Fails with kInvalidInput naming
// the field (a JSON pointer) when it is another kind or a field has the wrong type.
Result<ObservedShm> ReadShmProfile(JsonNode object);

// The ShmProfile object of `o`, as the agent writes it (`resource_version` non-empty: an update
// of that version).
std::string ShmProfileJson(const ObservedShm& o, std::string_view resource_version = {});

// The profiles known, by namespace and workload.
class ObservationIndex {
 public:
  void Put(ObservedShm o);
  void Erase(std::string_view namespace_name, std::string_view workload);
  // The profile of the first of `workloads` that has one in `namespace_name`, or nullptr.
  const ObservedShm* Find(std::string_view namespace_name, const std::vector<std::string>& workloads) const;
  size_t size() const { return by_key_.size(); }

 private:
  std::map<std::string, ObservedShm, std::less<>> by_key_;  // "namespace/workload"
};

// True when `o` was last observed more than `retention_days` before `now_seconds` (seconds since
// the epoch), or says no time it can be read from: the agents delete such a profile.
bool ProfileExpired(const ObservedShm& o, int64_t now_seconds, int64_t retention_days);

// The most bytes a ShmProfile's peakBytes or sizeBytes may say: 2^50 (1 PiB), past any node's
// memory. ReadShmProfile refuses more, so a peak times any margin the policy allows (at most 10)
// stays far inside int64.
inline constexpr int64_t kMaxObservedBytes = int64_t{1} << 50;

// The size a workload's observed peak asks for: `peak_bytes` × `margin_ppm` / 1e6, rounded up to
// a whole MiB; at most the largest whole MiB of int64, never a wrapped number.
int64_t LearnedBytes(int64_t peak_bytes, int64_t margin_ppm);

}  // namespace shmguard
