// What a device plugin mounted at a container's /dev/shm, as the kubelet's device manager keeps
// it. NVIDIA's device plugin in MPS mode mounts the MPS daemon's tmpfs there
// (NVIDIA/k8s-device-plugin internal/plugin/mps.go), which the spec cannot show: the node agent
// reads it here. The kubelet puts a device plugin's mounts first and the pod's volume mounts
// after them (kubernetes pkg/kubelet/kubelet_pods.go GenerateRunContainerOptions), so a volume
// at /dev/shm (shmguard's dshm) is mounted over the daemon's tmpfs and hides it.
// No I/O: the agent reads the file and hands its JSON here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/values/json_node.h"
#include "core/values/result.h"

namespace shmguard {

// The device manager's checkpoint under the kubelet's root directory
// (pkg/kubelet/cm/devicemanager/types.go kubeletDeviceManagerCheckpoint).
inline constexpr const char* kDeviceCheckpointPath = "device-plugins/kubelet_internal_checkpoint";

// A device plugin's mount at one container's /dev/shm.
struct DeviceShmMount {
  std::string pod_uid, container, resource;
  std::string host_path;  // on the node
};

// The /dev/shm mounts of a device manager checkpoint (pkg/kubelet/cm/devicemanager/checkpoint:
// {"Data": {"PodDeviceEntries": [{PodUID, ContainerName, ResourceName, DeviceIDs, AllocResp}]}},
// each AllocResp a device plugin API v1beta1 ContainerAllocateResponse in protobuf's wire format,
// base64 as Go's JSON writes bytes), in the file's order. Fails with kInvalidInput naming the
// entry when the file is not such an object or an AllocResp cannot be read.
Result<std::vector<DeviceShmMount>> ReadDeviceShmMounts(JsonNode checkpoint);

// The mounts of a ContainerAllocateResponse (field 2: Mount {container_path = 1, host_path = 2,
// read_only = 3}), as {container_path, host_path} pairs. Fails with kInvalidInput on a truncated
// or malformed message.
Result<std::vector<std::pair<std::string, std::string>>> AllocateResponseMounts(std::string_view protobuf);

// True when `container` of `pod` (a Pod object) mounts a volume at /dev/shm: mounted after a
// device plugin's mount there, it hides that one.
bool VolumeAtDevShm(JsonNode pod, std::string_view container);

}  // namespace shmguard
