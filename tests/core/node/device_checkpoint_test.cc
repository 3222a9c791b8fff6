// ReadDeviceShmMounts: a device plugin's /dev/shm mount read from the kubelet's device manager
// checkpoint (the real kubelet's file is read on the node, e2e/node/mps_test.go), and
// VolumeAtDevShm.
#include "core/node/device_checkpoint.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

using test::Base64;
std::string Varint(uint64_t v) { return test::ProtoVarint(v); }
std::string Bytes(int field, const std::string& value) { return test::ProtoBytes(field, value); }
std::string Number(int field, uint64_t v) { return test::ProtoNumber(field, v); }

std::string Mount(const std::string& container_path, const std::string& host_path, bool read_only = false) {
  return Bytes(1, container_path) + Bytes(2, host_path) + (read_only ? Number(3, 1) : "");
}

json Entry(const std::string& uid, const std::string& container, const std::string& resource,
           const std::string& alloc) {
  return {{"PodUID", uid},
          {"ContainerName", container},
          {"ResourceName", resource},
          {"DeviceIDs", {{"-1", {"gpu-0"}}}},
          {"AllocResp", Base64(alloc)}};
}

TEST_CASE("ReadDeviceShmMounts finds the mounts device plugins put at /dev/shm", "[device_checkpoint]") {
  // An MPS allocation: an env (a map entry), the daemon's tmpfs at /dev/shm, a device; a GPU
  // allocation with no mount; an RDMA one with a mount elsewhere.
  const std::string mps = Bytes(1, Bytes(1, "CUDA_MPS_PIPE_DIRECTORY") + Bytes(2, "/mps/pipe")) +
                          Bytes(2, Mount("/dev/shm/", "/run/nvidia/mps/shm")) +
                          Bytes(3, Bytes(1, "/dev/nvidia0") + Bytes(2, "/dev/nvidia0") + Bytes(3, "rw"));
  const std::string gpu = Bytes(1, Bytes(1, "NVIDIA_VISIBLE_DEVICES") + Bytes(2, "GPU-1"));
  const std::string rdma = Bytes(2, Mount("/dev/infiniband", "/dev/infiniband", true));
  json checkpoint = {{"Data",
                      {{"PodDeviceEntries",
                        {Entry("u1", "train", "nvidia.com/gpu.shared", mps), Entry("u2", "t", "nvidia.com/gpu", gpu),
                         Entry("u3", "t", "rdma/hca_shared_devices_a", rdma)}},
                       {"RegisteredDevices", {{"nvidia.com/gpu", {"gpu-0"}}}}}},
                     {"Checksum", 12345}};
  auto mounts = ReadDeviceShmMounts(JsonNode(checkpoint));
  REQUIRE(mounts);
  REQUIRE(mounts->size() == 1);
  CHECK((*mounts)[0].pod_uid == "u1");
  CHECK((*mounts)[0].container == "train");
  CHECK((*mounts)[0].resource == "nvidia.com/gpu.shared");
  CHECK((*mounts)[0].host_path == "/run/nvidia/mps/shm");

  json empty = {{"Data", {{"PodDeviceEntries", nullptr}, {"RegisteredDevices", json::object()}}}, {"Checksum", 1}};
  CHECK(ReadDeviceShmMounts(JsonNode(empty))->empty());  // no allocation yet: Go writes null
}

TEST_CASE("ReadDeviceShmMounts names what it cannot read", "[device_checkpoint]") {
  struct Case {
    const char* name;
    json checkpoint;
    std::string pointer;
  };
  const std::string truncated = Bytes(2, Mount("/dev/shm", "/x")).substr(0, 5);
  const Case cases[] = {
      {"not the checkpoint", json::array(), "/Data"},
      {"no Data", json{{"Checksum", 1}}, "/Data"},
      {"AllocResp not base64", json{{"Data", {{"PodDeviceEntries", {{{"AllocResp", "#!"}}}}}}},
       "/Data/PodDeviceEntries/0/AllocResp"},
      {"a truncated message",
       json{{"Data", {{"PodDeviceEntries", {Entry("u", "c", "r", ""), Entry("u", "c", "r", truncated)}}}}},
       "/Data/PodDeviceEntries/1/AllocResp"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto r = ReadDeviceShmMounts(JsonNode(c.checkpoint));
    REQUIRE_FALSE(r);
    CHECK(r.error().where.pointer == c.pointer);
  }
}

TEST_CASE("AllocateResponseMounts skips every other field type and refuses garbage", "[device_checkpoint]") {
  const std::string message = Number(7, 300) + Varint(8 << 3 | 1) + std::string(8, 'x') + Varint(9 << 3 | 5) +
                              std::string(4, 'y') + Bytes(2, Mount("/a", "/b"));
  auto mounts = AllocateResponseMounts(message);
  REQUIRE(mounts);
  CHECK(*mounts == std::vector<std::pair<std::string, std::string>>{{"/a", "/b"}});
  // A group (wire type 3), a length past the end, a varint that never ends.
  const std::string bad[] = {Varint(1 << 3 | 3), Varint(2 << 3 | 2) + Varint(5) + "ab", std::string(1, '\x80')};
  for (const std::string& b : bad) CHECK_FALSE(AllocateResponseMounts(b));
}

TEST_CASE("VolumeAtDevShm: a volume mounted at a container's /dev/shm hides a device mount there",
          "[device_checkpoint]") {
  const json pod = test::Yaml(R"(
spec:
  containers:
  - {name: a, volumeMounts: [{name: dshm, mountPath: /dev/shm/}]}
  - {name: b, volumeMounts: [{name: data, mountPath: /data}]}
  - {name: c}
)");
  CHECK(VolumeAtDevShm(JsonNode(pod), "a"));
  CHECK_FALSE(VolumeAtDevShm(JsonNode(pod), "b"));
  CHECK_FALSE(VolumeAtDevShm(JsonNode(pod), "c"));
  CHECK_FALSE(VolumeAtDevShm(JsonNode(pod), "missing"));
}

}  // namespace
}  // namespace shmguard
