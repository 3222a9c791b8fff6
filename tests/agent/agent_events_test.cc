// The agent's Events: one row each, with the reason and type the API shows, and words made from
// the numbers they are given.
#include "agent/agent_events.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

namespace shmguard::agent {
namespace {

TEST_CASE("Every agent Event has a reason of its own and a Normal or Warning type", "[agent_events]") {
  std::set<std::string_view> reasons;
  for (int i = 0; i <= static_cast<int>(AgentEvent::kShmMemoryLimitBelowShm); ++i) {
    const AgentEventInfo& info = InfoOf(static_cast<AgentEvent>(i));
    CAPTURE(info.reason);
    CHECK(static_cast<int>(info.event) == i);
    CHECK(info.reason.substr(0, 3) == "Shm");
    CHECK((info.type == "Normal" || info.type == "Warning"));
    CHECK(reasons.insert(info.reason).second);
  }
  CHECK(InfoOf(AgentEvent::kShmNearFull).reason == "ShmNearFull");
  CHECK(InfoOf(AgentEvent::kShmGrown).type == "Normal");
  CHECK(InfoOf(AgentEvent::kShmLeakReclaimed).type == "Normal");
  CHECK(InfoOf(AgentEvent::kShmLeaked).type == "Warning");
}

TEST_CASE("docs/agent.md lists every agent Event with its type", "[agent_events]") {
  std::ifstream in(std::string(SOURCE_DIR) + "/docs/agent.md");
  REQUIRE(in);
  std::stringstream doc;
  doc << in.rdbuf();
  for (int i = 0; i <= static_cast<int>(AgentEvent::kShmMemoryLimitBelowShm); ++i) {
    const AgentEventInfo& info = InfoOf(static_cast<AgentEvent>(i));
    CAPTURE(info.reason);
    CHECK_THAT(doc.str(), Catch::Contains("| `" + std::string(info.reason) + "` | " + std::string(info.type) + " |"));
  }
}

TEST_CASE("The agent's Event words say the numbers they are given", "[agent_events]") {
  constexpr uint64_t kMiB = 1 << 20;
  CHECK(Mib(110672 * 1024) == "108.1 MiB");
  CHECK_THAT(NearFullWords("dshm", 92 * kMiB, 100 * kMiB, 95 * kMiB),
             Catch::StartsWith("/dev/shm (volume dshm) is 92% full: 92.0 MiB of 100.0 MiB used, peak 95.0 MiB."));
  CHECK(GrownWords("dshm", "1Gi to 2Gi", 850) ==
        "/dev/shm (volume dshm) grown in place from 1Gi to 2Gi in 850 ms (resize subresource).");
  CHECK_THAT(NotGrownWords("dshm", "", "the pod has no memory limit to grow within", 3 * kMiB),
             Catch::StartsWith("/dev/shm (volume dshm) is not grown in place: the pod has no memory limit"));
  CHECK_THAT(
      NotGrownWords("dshm", "1Gi to 2Gi", "refused", kMiB),
      Catch::StartsWith("/dev/shm (volume dshm) is not grown in place from 1Gi to 2Gi: refused. Its peak 1.0 MiB"));
  CHECK_THAT(GrowthTimedOutWords("dshm", "1Gi to 2Gi", 120'400), Catch::Contains("within 120 s."));
  CHECK_THAT(KubeletRefusedWords("dshm", "1Gi to 2Gi", 40, "no room"),
             Catch::Contains("(read 40 ms after the resize): no room."));
  CHECK_THAT(
      LeakedWords(2, 600 * int64_t{kMiB}, 2),
      Catch::StartsWith("2 file(s), 600.0 MiB, in /dev/shm are held by no process of the pod after 2 container"));
  CHECK_THAT(LeakReclaimedWords("dshm", 1, 3 * int64_t{kMiB}, ""), Catch::EndsWith("reclaimLeakedSegments)."));
  CHECK_THAT(LeakReclaimedWords("dshm", 1, 3 * int64_t{kMiB}, "EROFS"), Catch::EndsWith("; not all: EROFS."));
  CHECK_THAT(LeakNotReclaimedWords("dshm", "EROFS"), Catch::Contains("(volume dshm): EROFS."));
  CHECK_THAT(UnpatchedWords("64 MiB (the container default)", 2048 * int64_t{kMiB}, true),
             Catch::Contains("below the 2048.0 MiB shmguard would give this pod: an admission policy sized it"));
  CHECK_THAT(UnpatchedWords("64 MiB", kMiB, false), Catch::Contains("did not patch it when it was created"));
  CHECK_THAT(HidesDeviceMountWords("c", "nvidia.com/gpu.shared", "/run/nvidia/mps/shm"),
             Catch::Contains("Add nvidia.com/gpu.shared to the shmguard policy's mpsResources"));
}

}  // namespace
}  // namespace shmguard::agent
