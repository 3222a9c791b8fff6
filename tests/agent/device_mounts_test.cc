// DeviceMounts: the kubelet's device checkpoint joined with the node's pods — each mount a device
// plugin made at a container's /dev/shm, whether a volume of the pod hides it, read again only
// when the file changes, and an unreadable version reported once (no mount known until the
// next readable one).
#include "agent/device_mounts.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::agent {
namespace {

using nlohmann::json;

std::shared_ptr<const json> Pod(const std::string& uid, const std::string& name, bool dshm) {
  json pod =
      test::Yaml("{metadata: {uid: " + uid + ", namespace: ml, name: " + name + "}, spec: {containers: [{name: c}]}}");
  if (dshm) {
    pod["spec"]["volumes"] = json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}});
    pod["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  }
  return std::make_shared<const json>(std::move(pod));
}

TEST_CASE("DeviceMounts joins the checkpoint's /dev/shm mounts with the node's pods, hidden or not",
          "[device_mounts]") {
  test::TempDir dir;
  const std::string path = dir.File("kubelet_internal_checkpoint");
  test::ReplaceFile(path, test::DeviceCheckpoint({
                              {"u1", "c", "nvidia.com/gpu.shared", {{"/dev/shm", "/run/nvidia/mps/shm"}}},
                              {"u2", "c", "nvidia.com/gpu.shared", {{"/dev/shm", "/run/nvidia/mps/shm"}}},
                              {"u3", "c", "nvidia.com/gpu", {{"/dev/nvidia0", "/dev/nvidia0"}}},  // not /dev/shm
                              {"gone", "c", "nvidia.com/gpu.shared", {{"/dev/shm", "/x"}}},
                          }));
  DeviceMounts d(path);
  const std::vector<std::shared_ptr<const json>> pods = {Pod("u1", "mps-client", false), Pod("u2", "hidden", true),
                                                         Pod("u3", "plain", false)};
  CHECK(d.Refresh(pods).empty());
  auto uses = d.uses();
  REQUIRE(uses.size() == 2);  // no mount at /dev/shm for u3; no pod for "gone"
  CHECK(uses[0].pod == "mps-client");
  CHECK(uses[0].resource == "nvidia.com/gpu.shared");
  CHECK(uses[0].host_path == "/run/nvidia/mps/shm");
  CHECK_FALSE(uses[0].hidden);
  CHECK(uses[1].pod == "hidden");
  CHECK(uses[1].hidden);  // its dshm is mounted over the daemon's tmpfs

  // A version that cannot be read: said once, and no mount is known until a readable one.
  test::ReplaceFile(path, "{not json");
  const std::string error = d.Refresh(pods);
  CHECK_FALSE(error.empty());
  CHECK(d.Refresh(pods).empty());  // the same version: not said again
  CHECK(d.uses().empty());
  test::ReplaceFile(path, test::DeviceCheckpoint({{"u1", "c", "nvidia.com/gpu.shared", {{"/dev/shm", "/m"}}}}));
  CHECK(d.Refresh(pods).empty());
  CHECK(d.uses().size() == 1);
  CHECK(DeviceMounts("").Refresh(pods).empty());  // no checkpoint: nothing read
  CHECK(d.errors() == 1);                         // the unreadable version, once

  // What it collects: each mount, and the versions it could not read.
  std::ostringstream out;
  d.Collect(out);
  CHECK_THAT(out.str(),
             Catch::Contains(R"(shmguard_pod_shm_device_mount{namespace="ml",pod="mps-client",container="c",)"
                             R"(resource="nvidia.com/gpu.shared",host_path="/m",hidden="false"} 1)"));
  CHECK_THAT(out.str(), Catch::Contains("\nshmguard_agent_device_checkpoint_errors_total 1\n"));
}

TEST_CASE("WriteDeviceMounts shows each device plugin's mount at /dev/shm, hidden or not", "[device_mounts]") {
  DeviceShmUse d;
  d.namespace_ = "ml";
  d.pod = "mps-0";
  d.uid = "u1";
  d.container = "c";
  d.resource = "nvidia.com/gpu.shared";
  d.host_path = "/run/nvidia/mps/shm";
  d.hidden = true;
  std::ostringstream out;
  WriteDeviceMounts(out, {d});
  CHECK_THAT(out.str(),
             Catch::Contains(R"(shmguard_pod_shm_device_mount{namespace="ml",pod="mps-0",container="c",)"
                             R"(resource="nvidia.com/gpu.shared",host_path="/run/nvidia/mps/shm",hidden="true"} 1)"));
}

}  // namespace
}  // namespace shmguard::agent
