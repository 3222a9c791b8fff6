// What a running pod uses of /dev/shm, for the node agent (`shmguard-agent`): the memory-backed
// volumes a pod mounts at /dev/shm, the workload its use is kept for, and a volume's samples
// (use, size, peak) with the moment they cross the warning threshold. No I/O: the agent statfs's
// the volumes and feeds the numbers here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/patch/plan_annotation.h"
#include "core/policy/policy.h"
#include "core/values/json_node.h"

namespace shmguard {

// A memory-backed emptyDir a pod mounts at /dev/shm in at least one container.
struct ShmVolume {
  std::string name;  // the volume's name (e.g. "dshm"); its tmpfs is kubelet's empty-dir/<name>
};

// The memory emptyDirs `pod` (a Pod object) mounts at /dev/shm, in the order of spec.volumes.
// Anything that is not such a volume, or a pod without spec, gives none.
std::vector<ShmVolume> FindShmVolumes(JsonNode pod);

// One volume's samples. Warns once per crossing: when use rises to `threshold` of the size or
// above, having been below it (or on the first sample); it re-arms once use falls back below
// `threshold` minus `kRearm` of the size, so a volume hovering at the threshold is not warned of
// every second.
class ShmWatch {
 public:
  static constexpr double kRearm = 0.05;

  // REQUIRES: 0 < threshold <= 1 (a fraction of the size). Default: 0.9.
  explicit ShmWatch(double threshold = 0.9) : threshold_(threshold) {}

  // Records one sample, in bytes. Returns true when this sample crosses the threshold. A size
  // of 0 (not mounted yet) is ignored. `leaked`: the bytes of the volume's leaked segments
  // (leaked_segments.h), part of `used` and of the threshold's fullness, never of the peak: what
  // a crashed process left is no demand of the workload's.
  bool Observe(uint64_t used, uint64_t size, uint64_t leaked = 0);

  uint64_t used() const { return used_; }
  uint64_t size() const { return size_; }
  uint64_t leaked() const { return leaked_; }  // as of the last sample
  uint64_t peak() const { return peak_; }      // the largest use seen, leaked segments left out
  double threshold() const { return threshold_; }

 private:
  double threshold_;
  uint64_t used_ = 0, size_ = 0, leaked_ = 0, peak_ = 0;
  bool above_ = false;
};

// Growing a running pod's /dev/shm in place (the pod's resize subresource, Kubernetes 1.37's
// InPlacePodVerticalScalingMemoryBackedVolumes): the new sizeLimit of volume `volume` of `pod`,
// or why there is none. The size doubles, up to the policy's maxFractionOfMemoryLimit of the
// pod's memory limit (the kubelet ignores a sizeLimit above the limit itself).
enum class GrowthRefusal {
  kNone,
  kNoSizeLimit,    // the volume has no sizeLimit: it already is the memory limit, and a resize
                   // may not add one
  kNoMemoryLimit,  // nothing bounds the pages: growing would only move the risk to the node
  kNoRoom,         // the sizeLimit is at the cap already
  kUnreadable,     // the pod or the volume cannot be read
};
struct Growth {
  GrowthRefusal refusal = GrowthRefusal::kNone;
  int64_t from_bytes = 0, to_bytes = 0;       // the sizeLimit now, and the one asked for
  int64_t cap_bytes = 0;                      // maxFractionOfMemoryLimit of the memory limit
  std::optional<int64_t> memory_limit_bytes;  // the pod's, when it has one
};
Growth GrowthTarget(JsonNode pod, std::string_view volume, const Policy& policy);

// A pod running with less /dev/shm than shmguard would give it: one the webhook did not patch
// (admitted while it was down or slow, or created before it was installed) or that an admission
// policy sized below the webhook's plan.
struct Unpatched {
  int64_t required_bytes = 0;  // what shmguard would give it
  std::string current;         // what it has, in words ("64Mi (container default)")
  bool policy_made = false;    // it carries the exported admission policies' plan (policyMode)
};

// Whether `pod` (a Pod as the API serves it, in its namespace) is one: its evaluation under
// `policy`, as the webhook would answer its creation, still changes its /dev/shm (shm-below-need),
// and it carries no plan of the webhook's (whose size, learned from use, may be below the
// formula's). nullopt for a pod shmguard would leave as it is, skips, or cannot read.
std::optional<Unpatched> FindUnpatched(JsonNode pod, const Policy& policy);

// A running pod whose memory limit no longer holds its /dev/shm (resize-below-shm): resized in
// place after admission, or admitted so where the check only warns. The finding EvaluateResize
// gives the pod as it stands (spec: what the kubelet resizes it to), with no pod before it;
// nullopt when it fits, is exempted, or is not shmguard's.
std::optional<Finding> FindLimitBelowShm(JsonNode pod, const Policy& policy);

// The body of the resize (a strategic merge patch of the pod's resize subresource) that sets
// volume `volume`'s sizeLimit to `bytes`.
std::string ResizeVolumePatch(std::string_view volume, int64_t bytes);

}  // namespace shmguard
