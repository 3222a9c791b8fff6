// SGLang's row against SGLang 0.5.23: for each launch shape, the broadcasters
// initialize_model_parallel makes (sglang/srt/distributed/parallel_state.py), worked out by hand,
// and the plan before NCCL at least their bytes and at most 1.5 × them + 1 GiB.
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

// A group's broadcaster of `size` ranks, all local: create_from_process_group(cpu_group, 1 << 22,
// 6), a ShmRingBuffer of (4 MiB + 1 + readers) × 6 with size - 1 readers.
constexpr int64_t Group(int64_t size) { return (4 * kMiB + 1 + (size - 1)) * 6; }

struct Shape {
  const char* name;
  const char* args;
  int64_t gpus;
  int64_t bytes;
  int64_t procs;
};

const Shape kShapes[] = {
    {"TP 1: no group of two", "--tp, '1'", 1, 0, 1},
    {"TP 2", "--tp-size, '2'", 2, Group(2), 2},
    {"TP 8", "--tensor-parallel-size, '8'", 8, Group(8), 8},
    // argparse spells out a prefix of exactly one option (allow_abbrev): --tensor-parallel-size.
    {"TP 8, abbreviated", "--tensor-parallel, '8'", 8, Group(8), 8},
    {"TP 4, abbreviated with =", "'--tensor-para=4'", 4, Group(4), 4},
    // Attention DP 2 splits the TP group into 2 attention-TP groups of 4 (:2798-2830).
    {"TP 8, attention DP 2", "--tp, '8', --attn-dp-size, '2'", 8, Group(8) + 2 * Group(4), 8},
    // The deprecated spelling: --dp-size N --enable-dp-attention is --attn-dp-size N.
    {"TP 8, --dp-size 8 --enable-dp-attention", "--tp, '8', --dp-size, '8', --enable-dp-attention", 8, Group(8), 8},
    {"TP 8, --dp 2 --enable-dp-attention", "--tp, '8', --dp, '2', --enable-dp-attention", 8, Group(8) + 2 * Group(4),
     8},
    // Attention CP 2: attention-TP groups of 4 (2) and attention-CP groups of 2 (4, :2760-2790).
    {"TP 8, attention CP 2", "--tp, '8', --attn-cp-size, '2'", 8, Group(8) + 2 * Group(4) + 4 * Group(2), 8},
    {"TP 8, attention CP 8: the TP group itself", "--tp, '8', --attention-context-parallel-size, '8'", 8, Group(8), 8},
    {"TP 8, attention DP 2 × CP 2", "--tp, '8', --attn-dp-size, '2', --attn-cp-size, '2'", 8,
     Group(8) + 4 * Group(2) + 4 * Group(2), 8},
    // Decode-CP groups inside each TP group (:2715-2741).
    {"TP 8, DCP 4", "--tp, '8', --dcp-size, '4'", 8, Group(8) + 2 * Group(4), 8},
    // --dp-size without attention DP: replicas, each a TP group of its own.
    {"TP 4 × DP 2", "--tp, '4', --dp-size, '2'", 8, 2 * Group(4), 8},
    {"TP 2 × PP 2", "--tp, '2', --pp-size, '2'", 4, 2 * Group(2), 4},
    // PD multiplexing duplicates each TP group (:2697-2713).
    {"TP 4, PD multiplexing", "--tp, '4', --enable-pdmux", 4, 2 * Group(4), 4},
    // A TP group over two pods: its writer and 7 readers in the first.
    {"TP 16 over two pods", "--tp, '16', --nnodes, '2'", 8, Group(8), 8},
};

TEST_CASE("PlanServer sizes every SGLang launch shape at least as SGLang 0.5.23 allocates it", "[sglang]") {
  const SizingConstants k;
  for (const Shape& s : kShapes) {
    SECTION(s.name) {
      const json c = test::Yaml(std::string("{command: [python3, -m, sglang.launch_server, ") + s.args + "]}");
      auto read = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
      REQUIRE(read);
      REQUIRE(read->has_value());
      auto plan = PlanServer(**read, s.gpus, std::nullopt);
      REQUIRE(plan);
      CAPTURE(plan->bytes, ServerTermsText(*plan));
      CHECK(plan->procs == s.procs);
      CHECK(plan->bytes >= s.bytes);
      ShmInputs in;
      in.procs = plan->procs;
      in.nccl_shm = false;
      in.server_bytes = plan->bytes;
      auto before_nccl = PlanShm(in, k);
      REQUIRE(before_nccl);
      CHECK(before_nccl->required_bytes >= s.bytes);
      CHECK(before_nccl->required_bytes <= s.bytes + s.bytes / 2 + kGiB);
    }
  }
}

TEST_CASE("PlanServer: SGLANG_USE_MESSAGE_QUEUE_BROADCASTER=false makes no broadcaster", "[sglang]") {
  const json c = test::Yaml(
      "{command: [python3, -m, sglang.launch_server, --tp, '4'], env: [{name: SGLANG_USE_MESSAGE_QUEUE_BROADCASTER, "
      "value: 'false'}]}");
  auto read = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
  REQUIRE(read);
  auto plan = PlanServer(**read, 4, std::nullopt);
  REQUIRE(plan);
  CHECK(plan->bytes == 0);
}

TEST_CASE("PlanServer: a sizing flag SGLang's parser refuses is refused, naming what it would take", "[sglang]") {
  const struct {
    const char* name;
    const char* args;
    std::vector<std::string> says;
  } cases[] = {
      // --pp begins --pp-size, --pp-max-micro-batch-size and --pp-async-batch-depth: SGLang
      // 0.5.23's parser exits with "ambiguous option".
      {"a prefix of several options",
       "--tp, '2', --pp, '2'",
       {"--pp is ambiguous to SGLang 0.5.23's parser", "--pp-size"}},
      // It exits "unrecognized arguments: --tp_size 4": no option of its parser has '_'.
      {"an underscore spelling", "--tp_size, '4'", {"--tp_size is no option of SGLang 0.5.23's parser", "--tp-size"}},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const json container = test::Yaml(std::string("{command: [python3, -m, sglang.launch_server, ") + c.args + "]}");
      auto read = ReadServerLaunch(JsonNode(container), "/spec/containers/0");
      REQUIRE_FALSE(read);
      CAPTURE(read.error().message);
      for (const auto& says : c.says) CHECK(read.error().message.find(says) != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace shmguard
