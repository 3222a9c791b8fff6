// BuildServicePatch: a Compose service gets shm_size (as Docker reads it) where a pod gets a dshm,
// and unlimited locked memory where a pod gets IPC_LOCK; nothing when it already conforms.
#include "core/patch/compose_patch.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kGiB = int64_t{1} << 30;

// The patch of the one service of `compose` (YAML), planned at `required` bytes.
Result<PodPatch> PatchOf(const std::string& compose, int64_t required, IpcLockMode lock = IpcLockMode::kNever) {
  static json doc;
  doc = test::Yaml(compose);
  const Workload w = test::OnlyTemplate(doc);
  REQUIRE(w.templates.size() == 1);
  const PodTemplate& t = w.templates[0];
  const PodReading r = ReadPod(t, Policy{});
  REQUIRE_FALSE(r.facts_error);
  auto mount = FindServiceShm(t);
  REQUIRE(mount);
  PatchOptions o;
  o.required_bytes = required;
  o.ipc_lock = lock;
  return BuildServicePatch(t, r.facts, *mount, o);
}

constexpr char kGpuService[] = R"(
services:
  trainer:
    image: pytorch/pytorch
    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]}}}
)";

TEST_CASE("BuildServicePatch sets shm_size as Docker reads it, and says what it was", "[compose_patch]") {
  auto added = PatchOf(kGpuService, 2 * kGiB);
  REQUIRE(added);
  CHECK(added->ops.Text() == R"([{"op":"add","path":"/services/trainer/shm_size","value":"2g"}])");
  CHECK(added->changes == std::vector<std::string>{"set shm_size: 2g (was Docker's 64m)"});
  CHECK(added->volume);
  CHECK(added->shm_pointer == "/services/trainer/shm_size");

  auto raised = PatchOf(std::string(kGpuService) + "    shm_size: 1gb\n", 3 * kGiB + 1);
  REQUIRE(raised);
  CHECK(raised->ops.Text() ==
        R"([{"op":"replace","path":"/services/trainer/shm_size","value":)" + std::to_string(3 * kGiB + 1) + "}]");
  CHECK(raised->changes.at(0) == "set shm_size: " + std::to_string(3 * kGiB + 1) + " (was 1g)");

  auto enough = PatchOf(std::string(kGpuService) + "    shm_size: 8g\n", 2 * kGiB);
  REQUIRE(enough);
  CHECK(enough->ops.empty());
  auto host = PatchOf(std::string(kGpuService) + "    ipc: host\n", 2 * kGiB);
  REQUIRE(host);
  CHECK(host->ops.empty());  // the host's /dev/shm
}

TEST_CASE("BuildServicePatch gives unlimited locked memory where a pod would get IPC_LOCK", "[compose_patch]") {
  auto locked = PatchOf(std::string(kGpuService) + "    shm_size: 8g\n", 2 * kGiB, IpcLockMode::kAlways);
  REQUIRE(locked);
  CHECK(locked->ops.Text() == R"([{"op":"add","path":"/services/trainer/ulimits","value":{"memlock":-1}}])");
  CHECK(locked->locked == std::vector<std::string>{"trainer"});
  CHECK(locked->lock_pointer == "/services/trainer/ulimits/memlock");

  auto other = PatchOf(std::string(kGpuService) + "    shm_size: 8g\n    ulimits: {nofile: 1024}\n", 2 * kGiB,
                       IpcLockMode::kAlways);
  REQUIRE(other);
  CHECK(other->ops.Text() == R"([{"op":"add","path":"/services/trainer/ulimits/memlock","value":-1}])");
  auto soft = PatchOf(std::string(kGpuService) + "    shm_size: 8g\n    ulimits: {memlock: {soft: 64, hard: 64}}\n",
                      2 * kGiB, IpcLockMode::kAlways);
  REQUIRE(soft);
  CHECK(soft->ops.Text() == R"([{"op":"replace","path":"/services/trainer/ulimits/memlock","value":-1}])");
  auto unlimited =
      PatchOf(std::string(kGpuService) + "    shm_size: 8g\n    ulimits: {memlock: {soft: -1, hard: -1}}\n", 2 * kGiB,
              IpcLockMode::kAlways);
  REQUIRE(unlimited);
  CHECK(unlimited->ops.empty());

  auto broken =
      PatchOf(std::string(kGpuService) + "    shm_size: 8g\n    ulimits: [memlock]\n", 2 * kGiB, IpcLockMode::kAlways);
  REQUIRE_FALSE(broken);
  CHECK(broken.error().where.ToString() == "/services/trainer/ulimits");
}

}  // namespace
}  // namespace shmguard
