// The checks' shared words and those that take more than an expression, from a finding's
// numbers and values.
#include "core/checks/internal/check_words.h"

#include <catch2/catch.hpp>

namespace shmguard::checks {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

TEST_CASE("The shared phrases: a size, a kind with its article, an estimate's floor", "[check_words]") {
  const Finding sized = Finding(Check::kShmBelowNeed, "/spec").Num("required_bytes", 2 * kGi);
  CHECK(Bytes(sized, "required_bytes") == "2Gi");
  CHECK(AKind(Finding(Check::kShmBelowNeed, "/spec").Val("kind", "InferenceService")) == "an InferenceService");
  CHECK(AKind(Finding(Check::kShmBelowNeed, "/spec").Val("kind", "TrainJob")) == "a TrainJob");
  Finding floor(Check::kSizedWithoutAnnotations, "/metadata");
  floor.Num("floor_bytes", kGi).Num("floor_plan_bytes", kGi / 2).Num("minimum_bytes", kGi).Num("procs", 2);
  CHECK(Floor(floor) == "the 1Gi floor (base for 2 procs = 512Mi, at least the 1Gi minimum)");
  floor.Num("nccl_shm", 1).Num("nccl_proxy", 1);
  CHECK(Floor(floor) == "the 1Gi floor (NCCL shm, NCCL proxy and base for 2 procs = 512Mi, at least the 1Gi minimum)");
}

TEST_CASE("The longer words say each number they are given", "[check_words]") {
  Finding below(Check::kShmBelowNeed, "/spec");
  below.Num("required_bytes", kGi).Val("current", "64Mi (the container default)");
  CHECK(BelowNeedWords(below) == "/dev/shm is 64Mi (the container default), below the 1Gi needed");
  below.Val("containers", "sidecar");
  CHECK_THAT(BelowNeedWords(below), Catch::StartsWith("/dev/shm is not mounted in sidecar"));

  Finding mismatch(Check::kProcsGpusMismatch, "");
  mismatch.Num("procs", 2).Num("gpus", 4).Val("procs_source", "--nproc_per_node=2");
  CHECK(ProcsGpusWords(mismatch) == "2 processes per pod (--nproc_per_node=2) but 4 GPUs: 2 GPUs stay idle");
  const Finding shared = Finding(Check::kProcsGpusMismatch, "")
                             .Num("procs", 8)
                             .Num("gpus", 4)
                             .Val("procs_source", "env PET_NPROC_PER_NODE=8");
  CHECK_THAT(ProcsGpusWords(shared), Catch::EndsWith("several processes share a GPU"));

  CHECK_THAT(TrainjobWhere("podTemplateOverrides"), Catch::Contains("Trainer v2.1"));
  CHECK_THAT(TrainjobWhere("runtimePatches"), Catch::Contains("Trainer v2.2 and later"));

  Finding over(Check::kShmOverMemoryLimit, "/spec");
  over.Num("required_bytes", 4 * kGi)
      .Num("memory_limit_bytes", 2 * kGi)
      .Val("volume", "dshm")
      .Val("limit_source", "pod-level limit");
  CHECK(OverMemoryLimitWords(over) ==
        "memory limit 2Gi (pod-level limit) is below the 4Gi dshm needs: raise the limit "
        "or lower num-workers/prefetch-factor/batch size");
}

}  // namespace
}  // namespace shmguard::checks
