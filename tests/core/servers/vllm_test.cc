// vLLM's row against vLLM 0.33.0: for each launch shape, the /dev/shm bytes vLLM allocates,
// worked out by hand from its code (docs/sources.md §10; the comments name the segments), and
// the plan before NCCL at least that and at most 1.5 × it + 1 GiB.
#include <catch2/catch.hpp>

#include "core/plan/shm_plan.h"
#include "core/policy/policy.h"
#include "core/servers/server_plan.h"
#include "core/values/json_node.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kMiB = int64_t{1} << 20, kGiB = int64_t{1} << 30;

// A MessageQueue's ShmRingBuffer (shm_broadcast.py:338-340): (chunk + 1 + readers) × chunks.
constexpr int64_t Ring(int64_t chunk, int64_t chunks, int64_t readers) { return (chunk + 1 + readers) * chunks; }
// The executor's queue to `n` local workers, VLLM_MQ_MAX_CHUNK_BYTES_MB chunks (16 MiB).
constexpr int64_t Executor(int64_t n, int64_t chunk_mib = 16) { return Ring(chunk_mib * kMiB, 10, n); }
// A worker's response queue, MessageQueue(1, 1): 10 chunks of 24 MiB, one reader.
constexpr int64_t kResponse = Ring(24 * kMiB, 10, 1);
// A group's broadcaster of `size` local ranks: 6 chunks of 4 MiB, size - 1 readers.
constexpr int64_t Group(int64_t size) { return Ring(4 * kMiB, 6, size - 1); }
// A worker's reply queue when its engine spans nodes: 6 × 4 MiB, one reader.
constexpr int64_t kReply = Ring(4 * kMiB, 6, 1);
// The shm tensor arena for `n` readers: (256 MiB + 1 + n) × 8 slots (shm_tensor_arena.py:99).
constexpr int64_t Arena(int64_t n) { return (256 * kMiB + 1 + n) * 8; }
// The multimodal cache: int(gb × 2^30) bytes and a 32-byte secret (shm_object_storage.py:141).
constexpr int64_t Mm(double gib) { return static_cast<int64_t>(gib * static_cast<double>(kGiB)) + 32; }

struct Shape {
  const char* name;
  const char* container;  // YAML of the container
  int64_t gpus;
  int64_t bytes;  // what vLLM 0.33.0 puts in /dev/shm
  int64_t procs;
};

const Shape kShapes[] = {
    // UniProcExecutor: one worker in the engine's own process, no queue, no group of two.
    {"one GPU", "{command: [vllm, serve, m]}", 1, 0, 1},
    {"TP 2", "{command: [vllm, serve, m, --tensor-parallel-size, '2']}", 2, Executor(2) + 2 * kResponse + Group(2), 2},
    {"TP 4", "{command: [vllm, serve, m, -tp, '4']}", 4, Executor(4) + 4 * kResponse + Group(4), 4},
    {"TP 8", "{command: [vllm, serve, m, -tp, '8']}", 8, Executor(8) + 8 * kResponse + Group(8), 8},
    // Pipeline stages are workers; no TP group of more than one rank.
    {"PP 2", "{command: [vllm, serve, m, -pp, '2']}", 2, Executor(2) + 2 * kResponse, 2},
    {"TP 4 × PP 2", "{command: [vllm, serve, m, -tp, '4', -pp, '2']}", 8, Executor(8) + 8 * kResponse + 2 * Group(4),
     8},
    // DP > 1 defaults the backend to mp even at TP = PP = 1 (vllm/config/parallel.py:1081-1119):
    // each engine its queue and its worker's response queue.
    {"DP 8", "{command: [vllm, serve, m, --data-parallel-size, '8']}", 8, 8 * (Executor(1) + kResponse), 8},
    {"DP 2 × TP 4", "{command: [vllm, serve, m, -dp, '2', -tp, '4']}", 8,
     2 * Executor(4) + 8 * kResponse + 2 * Group(4), 8},
    {"DP 4 × TP 2", "{command: [vllm, serve, m, -dp, '4', -tp, '2']}", 8,
     4 * Executor(2) + 8 * kResponse + 4 * Group(2), 8},
    // PCP multiplies an engine's workers (parallel.py:963-968); the TP groups are 2.
    {"TP 4 × PCP 2", "{command: [vllm, serve, m, -tp, '4', --prefill-context-parallel-size, '2']}", 8,
     Executor(8) + 8 * kResponse + 2 * Group(4), 8},
    // DCP groups inside TP each have a broadcaster (parallel_state.py:2250-2265).
    {"TP 8 × DCP 2", "{command: [vllm, serve, m, -tp, '8', -dcp, '2']}", 8,
     Executor(8) + 8 * kResponse + Group(8) + 4 * Group(2), 8},
    {"TP 8 × DCP 8", "{command: [vllm, serve, m, -tp, '8', --decode-context-parallel-size, '8']}", 8,
     Executor(8) + 8 * kResponse + 2 * Group(8), 8},
    // RayExecutorV2 is a MultiprocExecutor: the same queues on the driver's node
    // (ray_executor_v2.py:199-212, 239, 329-339). No memory limit: Ray's default store is not
    // counted (its finding says so).
    {"TP 8, Ray executor", "{command: [vllm, serve, m, -tp, '8', --distributed-executor-backend, ray]}", 8,
     Executor(8) + 8 * kResponse + Group(8), 8},
    {"DP 2 × TP 8, Ray executor", "{command: [vllm, serve, m, -dp, '2', -tp, '8', --distributed-executor-backend=ray]}",
     16, 2 * Executor(8) + 16 * kResponse + 2 * Group(8), 16},
    {"DP 8 on Ray's data-parallel backend", "{command: [vllm, serve, m, -dp, '8', --data-parallel-backend, ray]}", 8,
     8 * (Executor(1) + kResponse), 8},
    {"the uni executor", "{command: [vllm, serve, m, --distributed-executor-backend, uni]}", 1, 0, 1},
    // An external launcher starts the workers: no executor queues, the TP group's broadcaster.
    {"TP 2 under an external launcher",
     "{command: [vllm, serve, m, -tp, '2', --distributed-executor-backend, external_launcher]}", 2, Group(2), 2},
    // The tensor arena on mp's executor queue (shm_broadcast.py:529-532).
    {"TP 8 with the tensor arena", "{command: [vllm, serve, m, -tp, '8', --enable-shm-tensor-arena]}", 8,
     Executor(8) + 8 * kResponse + Group(8) + Arena(8), 8},
    {"DP 2 with the tensor arena", "{command: [vllm, serve, m, -dp, '2', --enable-shm-tensor-arena]}", 2,
     2 * (Executor(1) + kResponse + Arena(1)), 2},
    {"the Ray executor makes no arena",
     "{command: [vllm, serve, m, -tp, '8', --distributed-executor-backend, ray, --enable-shm-tensor-arena]}", 8,
     Executor(8) + 8 * kResponse + Group(8), 8},
    // The multimodal cache: one, made by the one API server (factories.py:36-45).
    {"TP 2, multimodal cache in shm", "{command: [vllm, serve, m, -tp, '2', --mm-processor-cache-type, shm]}", 2,
     Executor(2) + 2 * kResponse + Group(2) + Mm(4), 2},
    {"a 2.5 GiB cache",
     "{command: [vllm, serve, m, -tp, '2', --mm-processor-cache-type=shm, --mm-processor-cache-gb=2.5]}", 2,
     Executor(2) + 2 * kResponse + Group(2) + Mm(2.5), 2},
    {"DP 2 behind vLLM's own balancer: no shm cache",
     "{command: [vllm, serve, m, -dp, '2', --mm-processor-cache-type, shm]}", 2, 2 * (Executor(1) + kResponse), 2},
    {"an external balancer's rank: its own cache",
     "{command: [vllm, serve, m, -dp, '4', --data-parallel-rank, '0', --mm-processor-cache-type, shm]}", 1,
     Executor(1) + kResponse + Mm(4), 1},
    {"two API servers: no shm cache",
     "{command: [vllm, serve, m, -tp, '2', --api-server-count, '2', --mm-processor-cache-type, shm]}", 2,
     Executor(2) + 2 * kResponse + Group(2), 2},
    // CPU KV offload, native: one region per engine (shared_offload_region.py:128).
    {"KV offload, one GPU", "{command: [vllm, serve, m, --kv-offloading-size, '16']}", 1, 16 * kGiB, 1},
    {"KV offload, TP 2", "{command: [vllm, serve, m, -tp, '2', --kv-offloading-size, '8']}", 2,
     Executor(2) + 2 * kResponse + Group(2) + 8 * kGiB, 2},
    {"KV offload, DP 2", "{command: [vllm, serve, m, -dp, '2', --kv-offloading-size, '4']}", 2,
     2 * (Executor(1) + kResponse + 4 * kGiB), 2},
    {"KV offload through LMCache: its server's memory",
     "{command: [vllm, serve, m, --kv-offloading-size, '16', --kv-offloading-backend, lmcache]}", 1, 0, 1},
    {"the simple KV offload: private tensors",
     "{command: [vllm, serve, m, --kv-offloading-size, '16'], env: [{name: VLLM_USE_SIMPLE_KV_OFFLOAD, value: '1'}]}",
     1, 0, 1},
    {"VLLM_MQ_MAX_CHUNK_BYTES_MB=100",
     "{command: [vllm, serve, m, -tp, '8'], env: [{name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: '100'}]}", 8,
     Executor(8, 100) + 8 * kResponse + Group(8), 8},
    // An engine over two nodes (vllm/config/parallel.py:812-840): the leader's pod holds the
    // executor's queue to its 8 workers and each worker's 24 MiB reply queue
    // (multiproc_executor.py:727-745); the TP group of 8 is whole here.
    {"TP 8 × PP 2 over two pods", "{command: [vllm, serve, m, -tp, '8', -pp, '2', --nnodes, '2']}", 8,
     Executor(8) + 8 * kReply + Group(8), 8},
    // A TP group over two pods: its writer and 7 readers in the leader's pod.
    {"TP 16 over two pods", "{command: [vllm, serve, m, -tp, '16', --nnodes, '2']}", 8,
     Executor(8) + 8 * kReply + Group(8), 8},
    {"DP 16, 8 local", "{command: [vllm, serve, m, -dp, '16', --data-parallel-size-local, '8']}", 8,
     8 * (Executor(1) + kResponse), 8},
    {"DP 2 × TP 8 over two pods", "{command: [vllm, serve, m, -dp, '2', -tp, '8', --nnodes, '2']}", 8,
     Executor(8) + 8 * kResponse + Group(8), 8},
    {"headless, 2 of 4 engines", "{command: [vllm, serve, m, -dp, '4', -dpl, '2', --headless]}", 2,
     2 * (Executor(1) + kResponse), 2},
    // A count the spec cannot say (valueFrom) is the pod's GPUs.
    {"-tp from valueFrom",
     "{command: [sh, -c, 'vllm serve m -tp $(TP)'], env: [{name: TP, valueFrom: {fieldRef: {fieldPath: x}}}]}", 8,
     Executor(8) + 8 * kResponse + Group(8), 8},
};

TEST_CASE("PlanServer sizes every vLLM launch shape at least as vLLM 0.33.0 allocates it", "[vllm]") {
  REQUIRE(std::size(kShapes) >= 30);
  const SizingConstants k;
  for (const Shape& s : kShapes) {
    SECTION(s.name) {
      const json c = test::Yaml(s.container);
      auto read = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
      REQUIRE(read);
      REQUIRE(read->has_value());
      auto plan = PlanServer(**read, s.gpus, std::nullopt);
      REQUIRE(plan);
      CHECK(plan->procs == s.procs);
      CHECK(plan->bytes >= s.bytes);
      // The plan before NCCL: the server's segments and the base, times the safety factor.
      ShmInputs in;
      in.procs = plan->procs;
      in.nccl_shm = false;
      in.server_bytes = plan->bytes;
      auto before_nccl = PlanShm(in, k);
      REQUIRE(before_nccl);
      CAPTURE(plan->bytes, ServerTermsText(*plan));
      CHECK(before_nccl->required_bytes >= s.bytes);
      CHECK(before_nccl->required_bytes <= s.bytes + s.bytes / 2 + kGiB);
    }
  }
}

TEST_CASE("PlanServer words vLLM's terms and says what it cannot bound", "[vllm]") {
  auto plan_of = [](const char* container, int64_t gpus, std::optional<int64_t> limit = std::nullopt) {
    const json c = test::Yaml(container);
    auto read = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
    REQUIRE(read);
    REQUIRE(read->has_value());
    auto plan = PlanServer(**read, gpus, limit);
    REQUIRE(plan);
    return *plan;
  };
  CHECK(ServerTermsText(plan_of("{command: [vllm, serve, m, -tp, '2']}", 2)) ==
        "160Mi executor broadcast queue + 2 × 240Mi worker response queues + 24Mi tensor-parallel broadcaster + 16Ki "
        "of flags and page rounding over 4 segments");
  // The multimodal cache is the one segment vLLM makes without checking /dev/shm first.
  CHECK(plan_of("{command: [vllm, serve, m, --mm-processor-cache-type, shm]}", 1).unchecked ==
        "its multimodal cache is made");
  CHECK(plan_of("{command: [vllm, serve, m, -tp, '8']}", 8).unchecked.empty());
  // The Ray executor's store: a share of the memory limit, or unbounded without one.
  const ServerPlan ray = plan_of("{command: [vllm, serve, m, -tp, '8', --distributed-executor-backend, ray]}", 8);
  CHECK_FALSE(ray.unbounded.empty());
  const ServerPlan limited =
      plan_of("{command: [vllm, serve, m, -tp, '8', --distributed-executor-backend, ray]}", 8, 100 * kGiB);
  CHECK(std::any_of(limited.terms.begin(), limited.terms.end(),
                    [](const ServerTerm& t) { return t.segment == ServerSegment::kRayObjectStore; }));
  // KV offload on ROCm is a private tensor.
  CHECK(plan_of("{command: [vllm, serve, m, --kv-offloading-size, '16'], resources: {limits: {amd.com/gpu: 1}}}", 1)
            .bytes == 0);
}

}  // namespace
}  // namespace shmguard
