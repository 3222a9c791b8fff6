// TGI's row: its shards as text-generation-launcher's find_num_shards counts them (launcher/src/
// main.rs:1374-1412 at v3.3.7), from its flags or their env, and nothing of its own in /dev/shm.
#include "servers_test_util.h"

namespace shmguard {
namespace {

TEST_CASE("TGI runs --num-shard shards, else one with --sharded false, else one per GPU", "[tgi]") {
  const struct {
    const char* container;
    int64_t gpus, shards;
  } cases[] = {
      {"{name: t, command: [text-generation-launcher, --num-shard=4]}", 8, 4},
      {"{name: t, command: [text-generation-launcher, --sharded, 'false']}", 8, 1},
      {"{name: t, command: [text-generation-launcher], env: [{name: SHARDED, value: 'false'}]}", 8, 1},
      {"{name: t, command: [text-generation-launcher], env: [{name: NUM_SHARD, value: '2'}]}", 8, 2},
      {"{name: t, command: [text-generation-launcher, --sharded, 'true']}", 4, 4},
      {"{name: t, command: [text-generation-launcher]}", 2, 2},
      {"{name: t, command: [text-generation-launcher]}", 0, 1},  // no GPU: one shard
      {"{name: t, command: [text-generation-launcher, --sharded, 'false', --num-shard, '2']}", 8, 2},
      // The image's entrypoint is the launcher: arguments alone are its flags.
      {"{name: t, image: 'ghcr.io/huggingface/text-generation-inference:3.3.7', args: [--num-shard, '4']}", 8, 4},
  };
  for (const auto& c : cases) {
    CAPTURE(c.container, c.gpus);
    const ServerPlan p = test::PlanOf(c.container, c.gpus);
    CHECK(p.procs == c.shards);
    CHECK(p.bytes == 0);  // NCCL's segments only, counted by the plan's NCCL term
    CHECK(p.unbounded.empty());
  }
}

TEST_CASE("TGI's shards over more GPUs than the pod has span pods", "[tgi]") {
  const ServerPlan p = test::PlanOf("{name: t, command: [text-generation-launcher, --num-shard, '16']}", 8);
  CHECK(p.procs == 8);
  CHECK(p.multi_node);
}

}  // namespace
}  // namespace shmguard
