// DeviceMounts: what device plugins mounted at the /dev/shm of this node's containers — NVIDIA's
// plugin in MPS mode mounts the MPS daemon's tmpfs there — read from the kubelet's device
// manager checkpoint (device_checkpoint.h) whenever the file changes, and joined with the node's
// pods. A pod whose own volume is mounted over such a mount (shmguard's dshm, when its policy's
// mpsResources does not name the resource) hides it from the pod.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "core/node/device_checkpoint.h"
#include "io/files/file_watch.h"

namespace shmguard::agent {

// A device plugin's mount at a container's /dev/shm, on a pod of this node.
struct DeviceShmUse {
  std::string namespace_, pod, uid, container, resource, host_path;
  bool hidden = false;  // the container mounts a volume at /dev/shm over it (VolumeAtDevShm)
};

// The shmguard_pod_shm_device_mount gauge of `uses`, one sample each.
void WriteDeviceMounts(std::ostream& out, const std::vector<DeviceShmUse>& uses);

class DeviceMounts : public Collector {
 public:
  // `checkpoint`: the device manager's checkpoint as the agent sees it; "" reads nothing.
  explicit DeviceMounts(std::string checkpoint) : path_(std::move(checkpoint)) {}

  // Reads the checkpoint again when it changed, and joins its /dev/shm mounts with `pods` (the
  // node's, from the informer); a mount of a pod not among them (gone, or not listed yet) is left
  // out. Returns what could not be read, once per version of the file ("" when all is well); no
  // mount is known from such a version until a readable one. Counted in errors().
  std::string Refresh(const std::vector<std::shared_ptr<const nlohmann::json>>& pods);
  std::vector<DeviceShmUse> uses() const;
  const std::string& path() const { return path_; }
  uint64_t errors() const { return errors_; }
  // Each mount at a container's /dev/shm as a gauge, and the versions that could not be read.
  void Collect(std::ostream& out) const override;

 private:
  std::string path_;
  io::FileStamp stamp_;
  std::vector<DeviceShmMount> mounts_;
  mutable std::mutex mu_;
  std::vector<DeviceShmUse> uses_;
  std::atomic<uint64_t> errors_{0};
};

}  // namespace shmguard::agent
