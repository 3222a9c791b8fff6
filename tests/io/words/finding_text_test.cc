// FindingLine and FindingLines (a finding's words labelled by pod, picked by severity) and
// ExplainPlan. Each check's own words are tested with its row, in tests/core/checks/check_catalogue_test.cc.
#include "io/words/finding_text.h"

#include <catch2/catch.hpp>

#include "core/plan/shm_plan.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

constexpr int64_t kMi = 1 << 20;

TEST_CASE("FindingLine names the pod when asked and the finding has one", "[finding_text]") {
  Finding f = Finding(Check::kIpcLockMissing).Val("containers", "t").Val("reason", "policy ipcLock: always");
  CHECK(FindingLine(f, true) == "no IPC_LOCK in t (policy ipcLock: always)");  // the object's own
  f.pod = "replicatedJob workers";
  CHECK(FindingLine(f, false) == "no IPC_LOCK in t (policy ipcLock: always)");
  CHECK(FindingLine(f, true) == "replicatedJob workers: no IPC_LOCK in t (policy ipcLock: always)");
}

TEST_CASE("FindingLines keeps what is at least that severe and not exempted", "[finding_text]") {
  Evaluation ev;
  ev.pods.resize(2);
  ev.pods[0].findings = {Finding(Check::kNoGpus),
                         Finding(Check::kIpcLockMissing).Val("containers", "t").Val("reason", "policy ipcLock: all")};
  ev.pods[0].findings[1].pod = "a";
  ev.pods[1].findings = {Finding(Check::kAnnotationsRequired)};
  ev.pods[1].findings[0].pod = "b";
  ev.pods[1].findings[0].suppressed = true;
  CHECK(FindingLines(ev, Severity::kInfo) ==
        std::vector<std::string>{"no GPUs and no sizing annotations", "a: no IPC_LOCK in t (policy ipcLock: all)"});
  CHECK(FindingLines(ev, Severity::kWarning) == std::vector<std::string>{"a: no IPC_LOCK in t (policy ipcLock: all)"});
  CHECK(FindingLines(ev, Severity::kError).empty());
}

TEST_CASE("ExplainPlan writes one line per term, the proxy pool and the floor", "[finding_text]") {
  // 2 procs on 2 nodes, no DataLoader workers: NCCL, proxy pool and base only, under the floor.
  SizingConstants k;
  auto plan = PlanShm({0, 2, 0, 2, 2}, k);
  REQUIRE(plan.has_value());
  REQUIRE(plan->floor_applied);
  CHECK(ExplainPlan(*plan, k) ==
        std::vector<std::string>{"DataLoader: 0 workers, batches stay in the training process = 0",
                                 "NCCL shm transport: 2 procs × 2 channels × 1 peer × 9637892 B = 36.8Mi",
                                 "NCCL proxy pool (multi-node, 2 pods): 2 procs × 34210180 B = 65.3Mi", "base: 64Mi",
                                 "sum 166.0Mi × 1.2 safety, rounded up to MiB = 200Mi",
                                 "floor for 2 procs per pod (NVIDIA's 1g advice): 1Gi"});
  auto sized = PlanShm({8, 2, 160 * kMi, 4, 1}, k);
  REQUIRE(sized.has_value());
  auto lines = ExplainPlan(*sized, k);
  CHECK(lines.front() == "DataLoader: 4 procs × (8 workers × 2 prefetch + 2) × 160Mi = 11520Mi");
  CHECK(lines.back() == "sum 11731.1Mi × 1.2 safety, rounded up to MiB = 14078Mi");
}

}  // namespace
}  // namespace shmguard::io
