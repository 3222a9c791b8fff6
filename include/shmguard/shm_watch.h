// What a running pod uses of /dev/shm, for the node agent (`shmguard agent`): the memory-backed
// volumes a pod mounts at /dev/shm, the workload its use is kept for, and a volume's samples
// (use, size, peak) with the moment they cross the warning threshold. No I/O: the agent statfs's
// the volumes and feeds the numbers here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shmguard {

// A memory-backed emptyDir a pod mounts at /dev/shm in at least one container.
struct ShmVolume {
  std::string name;  // the volume's name (e.g. "dshm"); its tmpfs is kubelet's empty-dir/<name>
};

// The memory emptyDirs `pod` (a Pod object) mounts at /dev/shm, in the order of spec.volumes.
// Anything that is not such a volume, or a pod without spec, gives none.
std::vector<ShmVolume> FindShmVolumes(const nlohmann::json& pod);

// The workload a pod's /dev/shm use is kept for: the shmguard.io/profile annotation when set
// ("profile/<value>"); else its controller, "Kind/name" — a ReplicaSet made by a Deployment
// (its name is the Deployment's plus "-" and the pod's pod-template-hash label) as the
// Deployment; else "Pod/<name>". Examples: "Job/resnet", "Deployment/serve", "profile/llm-ft".
std::string WorkloadOf(const nlohmann::json& pod);

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
  // of 0 (not mounted yet) is ignored.
  bool Observe(uint64_t used, uint64_t size);

  uint64_t used() const { return used_; }
  uint64_t size() const { return size_; }
  uint64_t peak() const { return peak_; }  // the largest use seen
  double threshold() const { return threshold_; }

 private:
  double threshold_;
  uint64_t used_ = 0, size_ = 0, peak_ = 0;
  bool above_ = false;
};

}  // namespace shmguard
