// Triton's row: its ranks from mpirun's -n, --world-size, else --tp-size × --pp-size, else the
// GPUs; and the Python backend's regions, which the pod spec cannot bound.
#include "servers_test_util.h"

namespace shmguard {
namespace {

TEST_CASE("Triton's ranks: mpirun -n, --world-size, TP × PP, else the GPUs", "[triton]") {
  const struct {
    const char* container;
    int64_t gpus, ranks;
  } cases[] = {
      {"{name: t, command: [mpirun, -np, '2', tritonserver]}", 2, 2},
      {"{name: t, command: [mpirun, -n, '4', tritonserver, --model-repository, /models]}", 4, 4},
      {"{name: t, command: [python3, launch_triton_server.py, --world-size, '8']}", 8, 8},
      {"{name: t, command: [trtllm-serve, model, --tp-size, '2', --pp-size, '2']}", 4, 4},
      {"{name: t, command: [tritonserver, --model-repository, /models]}", 2, 2},
      {"{name: t, command: [tritonserver]}", 0, 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.container, c.gpus);
    const ServerPlan p = test::PlanOf(c.container, c.gpus);
    CHECK(p.procs == c.ranks);
    CHECK(p.bytes == 0);
    // Its Python backend's regions, a MiB per model instance growing with its tensors: named,
    // never counted (the model repository says how many instances there are).
    CHECK_THAT(p.unbounded, Catch::Contains("Python backend"));
  }
}

TEST_CASE("mpirun counts only when it launches Triton", "[triton]") {
  const nlohmann::json c = test::Yaml("{name: t, command: [mpirun, -n, '8', all_reduce_perf, -b, 8]}");
  auto l = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
  REQUIRE(l);
  CHECK_FALSE(l->has_value());  // NCCL's own test: no server
}

}  // namespace
}  // namespace shmguard
