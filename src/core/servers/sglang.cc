// SGLang's row: its launchers, the flags and variables that size it, and the broadcasters SGLang
// 0.5.23 makes for a launch. Every line cited is the sglang-0.5.23 wheel (docs/sources.md §10):
// parallel_state.py is sglang/srt/distributed/parallel_state.py.
#include <algorithm>
#include <cctype>

#include "launch_text.h"
#include "server_rows.h"

namespace shmguard::servers {
namespace {

// A group's broadcaster: create_from_process_group(cpu_group, 1 << 22, 6) (parallel_state.py:
// 563-567), 6 chunks of 4 MiB and (1 + readers) flag bytes per chunk
// (sglang/srt/distributed/device_communicators/shm_broadcast.py, ShmRingBuffer).
constexpr int64_t kChunks = 6, kChunkBytes = int64_t{1} << 22;

int64_t LocalGroups(int64_t ranks, int64_t size) {
  if (size <= 1) return 0;
  return ranks >= size ? ranks / size : ranks >= 2 ? 1 : 0;
}

Result<ServerPlan> PlanSglang(const ServerLaunch& l, int64_t gpus, std::optional<int64_t> memory_limit) {
  ServerLaunch launch = l;
  FillUnread(gpus, {&launch.tensor_parallel, &launch.data_parallel, &launch.pipeline_parallel, &launch.attention_dp,
                    &launch.attention_cp, &launch.decode_context_parallel, &launch.nnodes});
  PlanBuilder b;
  // --dp-size without attention DP runs that many replicas, each a world of TP × PP ranks
  // (initialize_model_parallel, :2626-2639).
  const int64_t tp = launch.tensor_parallel;
  const int64_t world = tp * launch.pipeline_parallel * launch.data_parallel;
  b.plan.procs = LocalRanks(world, launch.nnodes, gpus, b.plan.multi_node);
  if (tp > 1 && launch.mq_broadcaster) {
    // Every group of more than one rank that initialize_model_parallel builds with a
    // broadcaster, unless SGLANG_USE_MESSAGE_QUEUE_BROADCASTER is false (sglang/srt/environ.py:373):
    // each TP group (:2686-2695) and, with --enable-pdmux, its duplicate (:2697-2713); inside it,
    // the decode-CP groups (:2715-2741), and where they split it, the attention-CP groups
    // (:2760-2790) and the attention-TP groups of TP / (attention DP × attention CP) ranks
    // (:2798-2830).
    const int64_t groups = LocalGroups(b.plan.procs, tp);
    const int64_t readers = std::min(tp, b.plan.procs);
    b.Add(ServerSegment::kTpBroadcaster, groups, kChunks * kChunkBytes, kChunks * readers);
    if (launch.pdmux) b.Add(ServerSegment::kPdmuxTpBroadcaster, groups, kChunks * kChunkBytes, kChunks * readers);
    const int64_t split = std::max<int64_t>(1, launch.attention_dp * launch.attention_cp);
    const int64_t attn_tp = std::max<int64_t>(1, tp / split);
    if (launch.decode_context_parallel > 1) {
      b.Add(ServerSegment::kDcpBroadcaster, groups * std::max<int64_t>(1, tp / launch.decode_context_parallel),
            kChunks * kChunkBytes, kChunks * launch.decode_context_parallel);
    }
    if (launch.attention_cp > 1 && launch.attention_cp < tp) {
      b.Add(ServerSegment::kAttentionCpBroadcaster, groups * (tp / launch.attention_cp), kChunks * kChunkBytes,
            kChunks * launch.attention_cp);
    }
    if (attn_tp > 1 && attn_tp < tp) {
      b.Add(ServerSegment::kAttentionTpBroadcaster, groups * (tp / attn_tp), kChunks * kChunkBytes, kChunks * attn_tp);
    }
  }
  // --offload-mode shm_cpu keeps the offloaded layers' weights in SharedMemory segments
  // (sglang/srt/utils/offloader.py:225-230): a share of the model (--offload-num-in-group of
  // every --offload-group-size layers), which no launch flag bounds in bytes.
  if (launch.shm_cpu_offload) {
    b.plan.unbounded =
        "--offload-mode shm_cpu: the offloaded layers' weights, a share of the model's size, in /dev/shm";
  }
  // Its multimodal features go through SharedMemory segments bounded only by what is in flight
  // (sglang/srt/managers/mm_utils.py:1377): no flag bounds them.
  if (launch.ray_started) AddRayStore(launch, memory_limit, b);
  return b.Finish();
}

// The deprecated --dp-size N --enable-dp-attention is --attn-dp-size N, and --dp-size counts
// replicas again (sglang/srt/arg_groups/parallel_hook.py:40-61).
std::string Settle(ServerLaunch& l) {
  if (l.dp_attention && l.attention_dp == 1) {
    l.attention_dp = l.data_parallel;
    l.data_parallel = 1;
  }
  return "";
}

constexpr FlagRow kFlags[] = {
    // argparse takes an unambiguous prefix of a long flag: --tp for --tp-size.
    {{"--tensor-parallel-size", "--tp-size", "--tp"}, FlagValue::kCount, SetCount<&ServerLaunch::tensor_parallel>},
    {{"--pipeline-parallel-size", "--pp-size", "--pp"}, FlagValue::kCount, SetCount<&ServerLaunch::pipeline_parallel>},
    {{"--data-parallel-size", "--dp-size", "--dp"}, FlagValue::kCount, SetCount<&ServerLaunch::data_parallel>},
    {{"--nnodes"}, FlagValue::kCount, SetCount<&ServerLaunch::nnodes>},
    // sglang/srt/arg_groups/fields/parallel.py: attn_dp_size, attn_cp_size, dcp_size and their
    // long aliases.
    {{"--attn-dp-size", "--attention-data-parallel-size"}, FlagValue::kCount, SetCount<&ServerLaunch::attention_dp>},
    {{"--attn-cp-size", "--attention-context-parallel-size"}, FlagValue::kCount, SetCount<&ServerLaunch::attention_cp>},
    {{"--dcp-size", "--decode-context-parallel-size"},
     FlagValue::kCount,
     SetCount<&ServerLaunch::decode_context_parallel>},
    {{"--enable-dp-attention"},
     FlagValue::kSwitch,
     [](ServerLaunch& l, const FlagRead& r) { l.dp_attention = r.flag; }},
    // sglang/srt/arg_groups/fields/disagg.py:173-176.
    {{"--enable-pdmux"}, FlagValue::kSwitch, [](ServerLaunch& l, const FlagRead& r) { l.pdmux = r.flag; }},
    // sglang/srt/arg_groups/fields/exec_.py:1084.
    {{"--offload-mode"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead& r) { l.shm_cpu_offload = r.word == "shm_cpu"; }},
};

constexpr EnvRow kEnv[] = {
    // EnvBool (sglang/srt/environ.py:143-150): true, 1, yes, y and false, 0, no, n in any case;
    // anything else SGLang refuses.
    {"SGLANG_USE_MESSAGE_QUEUE_BROADCASTER",
     [](ServerLaunch& l, std::string_view v) {
       std::string lower(v);
       for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
       if (lower == "true" || lower == "1" || lower == "yes" || lower == "y") {
         l.mq_broadcaster = true;
       } else if (lower == "false" || lower == "0" || lower == "no" || lower == "n") {
         l.mq_broadcaster = false;
       } else {
         return false;
       }
       return true;
     },
     "true, 1, yes, y, false, 0, no or n"},
};

constexpr LauncherRow kLaunchers[] = {{"sglang", "serve"}, {"-m", "sglang.launch_server"}};

}  // namespace

const ServerRow kSglangRow = {Server::kSglang,          "sglang", "SGLang", kLaunchers, {}, kFlags, kEnv,
                              NumberParser::kPythonInt, nullptr,  Settle,   PlanSglang};

}  // namespace shmguard::servers
