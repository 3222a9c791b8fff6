// TGI's row: text-generation-launcher and its image, its shards from --num-shard and --sharded
// (or their env), as the launcher finds them. Lines cited are huggingface/text-generation-inference
// launcher/src/main.rs at v3.3.7 (docs/sources.md §10). TGI keeps nothing of its own in
// /dev/shm beyond NCCL's segments for its shards.
#include <algorithm>

#include "core/servers/internal/server_rows.h"

namespace shmguard::servers {
namespace {

// find_num_shards (main.rs:1374-1412): --num-shard when given; else one shard with
// --sharded false, else every GPU the launcher sees (its CUDA_VISIBLE_DEVICES, here the pod's).
Result<ServerPlan> PlanTgi(const ServerLaunch& l, int64_t gpus, std::optional<int64_t>) {
  PlanBuilder b;
  int64_t shards = std::max<int64_t>(gpus, 1);
  if (l.world_size) {
    shards = *l.world_size;
  } else if (l.sharded && !*l.sharded) {
    shards = 1;
  }
  b.plan.procs = LocalRanks(shards, 1, gpus, b.plan.multi_node);
  return b.Finish();
}

// Both flags are clap `long, env` (main.rs:601-613): the env variable when the flag is absent.
constexpr FlagRow kFlags[] = {
    {{"--num-shard"}, FlagValue::kCount, SetOptionalCount<&ServerLaunch::world_size>, "NUM_SHARD"},
    {{"--sharded"}, FlagValue::kBool, [](ServerLaunch& l, const FlagRead& r) { l.sharded = r.flag; }, "SHARDED"},
};

constexpr LauncherRow kLaunchers[] = {{"text-generation-launcher", ""}};
constexpr std::string_view kImages[] = {"text-generation-inference"};

}  // namespace

const ServerRow kTgiRow = {Server::kTgi, "tgi",   "TGI",  kLaunchers, kImages, kFlags, {}, NumberParser::kRustUsize,
                           nullptr,      nullptr, PlanTgi};

}  // namespace shmguard::servers
