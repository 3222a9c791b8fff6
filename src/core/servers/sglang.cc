// SGLang's row: its launchers, the flags and variables that size it, and the broadcasters SGLang
// 0.5.23 makes for a launch. Every line cited is the sglang-0.5.23 wheel (docs/sources.md §10):
// parallel_state.py is sglang/srt/distributed/parallel_state.py.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/servers/internal/launch_text.h"
#include "core/servers/internal/server_rows.h"
#include "core/servers/internal/sglang_options.h"

namespace shmguard::servers {
namespace {

// A group's broadcaster: create_from_process_group(cpu_group, 1 << 22, 6) (parallel_state.py:
// 563-567), 6 chunks of 4 MiB and (1 + readers) flag bytes per chunk
// (sglang/srt/distributed/device_communicators/shm_broadcast.py, ShmRingBuffer).
constexpr int64_t kChunks = 6, kChunkBytes = int64_t{1} << 22;

// The groups that make their broadcaster's file in this pod, which runs ranks [first, first +
// procs): those whose writer, their first rank (`writes`), and its next rank, `stride` on, both
// run here. create_from_process_group has the group's first rank make the MessageQueue
// (shm_broadcast.py:487-520), and a queue with no reader on its node makes no file (:199).
template <typename Writes>
int64_t GroupsHere(int64_t first, int64_t procs, int64_t stride, Writes writes) {
  int64_t n = 0;
  for (int64_t r = first; r < first + procs; ++r) n += writes(r) && r + stride < first + procs ? 1 : 0;
  return n;
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
    // each TP group of consecutive ranks (:2676-2695) and, with --enable-pdmux, its duplicate
    // (:2697-2713); inside it, the decode-CP groups of consecutive ranks (:2715-2741), and where
    // they split it, the attention-CP groups, every attention-TP size-th rank (:2760-2790), and
    // the attention-TP groups of TP / (attention DP × attention CP) consecutive ranks (:2798-2830).
    // A pod of a launch over several (--nnodes) runs the ranks from --node-rank × its share on.
    const int64_t procs = b.plan.procs, first = b.plan.multi_node ? launch.node_rank * procs : 0;
    const int64_t tp_groups = GroupsHere(first, procs, 1, [&](int64_t r) { return r % tp == 0; });
    const int64_t meta = kChunks * std::min(tp, procs);
    b.Add(ServerSegment::kTpBroadcaster, tp_groups, kChunks * kChunkBytes, meta);
    if (launch.pdmux) b.Add(ServerSegment::kPdmuxTpBroadcaster, tp_groups, kChunks * kChunkBytes, meta);
    const int64_t dcp = launch.decode_context_parallel, cp = launch.attention_cp;
    const int64_t attn_tp = std::max<int64_t>(1, tp / std::max<int64_t>(1, launch.attention_dp * cp));
    if (dcp > 1) {
      b.Add(ServerSegment::kDcpBroadcaster, GroupsHere(first, procs, 1, [&](int64_t r) { return r % dcp == 0; }),
            kChunks * kChunkBytes, kChunks * dcp);
    }
    if (cp > 1 && cp < tp) {
      const int64_t block = attn_tp * cp;
      b.Add(ServerSegment::kAttentionCpBroadcaster,
            GroupsHere(first, procs, attn_tp, [&](int64_t r) { return r % tp % block < attn_tp; }),
            kChunks * kChunkBytes, kChunks * cp);
    }
    if (attn_tp > 1 && attn_tp < tp) {
      b.Add(ServerSegment::kAttentionTpBroadcaster,
            GroupsHere(first, procs, 1, [&](int64_t r) { return r % attn_tp == 0; }), kChunks * kChunkBytes,
            kChunks * attn_tp);
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
// replicas again (sglang/srt/arg_groups/parallel_hook.py:40-61). A --config file no ConfigMap of
// the input holds may set the TP size: where the command line does not, it is the pod's GPUs.
std::string Settle(ServerLaunch& l) {
  if (l.dp_attention && l.attention_dp == 1) {
    l.attention_dp = l.data_parallel;
    l.data_parallel = 1;
  }
  if (!l.config_file.empty() && !GivenOnCommandLine(l, {"--tensor-parallel-size", "--tp-size"})) {
    l.tensor_parallel = 0;
  }
  return "";
}

// ConfigArgumentMerger.merge_config_with_args (sglang/srt/utils/server_args_config_parser.py
// :75-106, 164-209), which prepare_server_args runs when a word is exactly "--config"
// (server_args.py:683-689): the file's keys as flags, each spelled as the key is written, put
// before every word of the command line, which so wins. true gives `--key` (a store_true flag's
// form), false nothing, a list its items, a mapping its JSON. A key with '_' is not a flag SGLang
// knows ("--tp_size"): its parser refuses the launch. "--config=FILE" is not merged: the file is
// never read. A file no ConfigMap of the input holds is left to --config's row.
Result<std::vector<std::string>> MergeConfig(std::vector<std::string> words, const ContainerConfig* config,
                                             ServerLaunch& l) {
  std::erase_if(words, [](const std::string& w) { return w.starts_with("--config="); });
  const auto at = std::find(words.begin(), words.end(), "--config");
  if (at == words.end()) return words;
  if (std::count(words.begin(), words.end(), "--config") > 1) {
    return MakeError(Code::kInvalidInput,
                     "--config is given twice, which SGLang refuses (server_args_config_parser.py:112-113)");
  }
  if (at + 1 == words.end()) {
    return MakeError(Code::kInvalidInput,
                     "--config names no file, which SGLang refuses (server_args_config_parser.py:119-120)");
  }
  const std::string path = *(at + 1);
  const size_t dot = path.rfind('.');
  std::string suffix = dot == std::string::npos ? "" : path.substr(dot);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (suffix != ".yaml" && suffix != ".yml") {
    return MakeError(Code::kInvalidInput, "--config " + path +
                                              " is not a .yaml or .yml file, which SGLang refuses "
                                              "(server_args_config_parser.py:157-159)");
  }
  const ConfigFile* f = FindConfigFile(config, path);
  if (!f) return words;
  if (!f->yaml || !(f->yaml->is_object() || f->yaml->is_null())) {
    return MakeError(Code::kInvalidInput, "--config " + path + " (" + f->source +
                                              ") is not a YAML mapping, which SGLang refuses" +
                                              (f->yaml_error.empty() ? "" : ": " + f->yaml_error));
  }
  std::vector<std::string> args;
  if (f->yaml->is_object()) {
    for (const auto& [key, value] : f->yaml->items()) {
      if (key.find('_') != std::string::npos) {
        return MakeError(Code::kInvalidInput, "--config " + path + " (" + f->source + ") has the key " + key +
                                                  ", which SGLang passes as --" + key +
                                                  ": no flag of its parser, so it refuses the launch "
                                                  "(server_args_config_parser.py:208-210)");
      }
      if (value.is_boolean()) {
        if (value.get<bool>()) args.push_back("--" + key);
      } else if (value.is_array()) {
        if (value.empty()) continue;
        args.push_back("--" + key);
        for (const auto& item : value) args.push_back(PythonStr(item));
      } else {
        args.push_back("--" + key);
        args.push_back(value.is_object() ? value.dump() : PythonStr(value));
      }
    }
  }
  l.read.push_back("--config " + path + " (" + f->source + ")");
  words.erase(at, at + 2);
  words.insert(words.begin(), args.begin(), args.end());
  return words;
}

constexpr FlagRow kFlags[] = {
    // Each option as SGLang's parser spells it; an abbreviation ("--tp") Prepare has spelled out.
    {{"--tensor-parallel-size", "--tp-size"}, FlagValue::kCount, SetCount<&ServerLaunch::tensor_parallel>},
    {{"--pipeline-parallel-size", "--pp-size"}, FlagValue::kCount, SetCount<&ServerLaunch::pipeline_parallel>},
    {{"--data-parallel-size", "--dp-size"}, FlagValue::kCount, SetCount<&ServerLaunch::data_parallel>},
    {{"--nnodes"}, FlagValue::kCount, SetCount<&ServerLaunch::nnodes>},
    // The pod's place in a launch over several (sglang/srt/arg_groups/fields/parallel.py:44); a
    // value the spec leaves to run time reads as 0, the node that writes the most groups.
    {{"--node-rank"}, FlagValue::kCount, SetCount<&ServerLaunch::node_rank>, {}, 0},
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
    // A --config file Prepare could not read (no ConfigMap of the input holds it).
    {{"--config"}, FlagValue::kWord, [](ServerLaunch& l, const FlagRead& r) { l.config_file = std::string(r.word); }},
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

// Whether `key` begins a flag this row reads ("--pp" begins --pp-size).
bool BeginsARead(std::string_view key) {
  for (const FlagRow& row : kFlags) {
    for (std::string_view name : row.names) {
      if (!name.empty() && name.starts_with(key)) return true;
    }
  }
  return false;
}

// The words as argparse matches them (prepare_server_args' parser keeps allow_abbrev): a long
// flag that begins exactly one of SGLang's options is that option ("--tensor-parallel 8",
// "--tp 8"). One that begins several SGLang refuses ("--pp": --pp-size, --pp-max-micro-batch-size,
// --pp-async-batch-depth); shmguard refuses it too, naming them, where it begins a flag the size
// depends on, and otherwise leaves it: an image of another release may take it whole
// ("--cuda-graph-max-bs", which 0.5.23 splits in two).
Result<std::vector<std::string>> Prepare(std::vector<std::string> words, const ContainerConfig* config,
                                         ServerLaunch& l) {
  auto merged = MergeConfig(std::move(words), config, l);
  if (!merged) return merged.error();
  for (std::string& word : *merged) {
    if (!word.starts_with("--") || word.size() <= 2) continue;
    const size_t eq = word.find('=');
    const std::string key = word.substr(0, eq);
    auto full = ArgparseMatch(key, SglangOptions(), "SGLang " + std::string(kSglangOptionsVersion));
    if (!full && !BeginsARead(key)) continue;
    if (!full) return MakeError(full.error().code, key + " " + full.error().message);
    if (*full && **full != key) word = std::string(**full) + (eq == std::string::npos ? "" : word.substr(eq));
    // "--tp_size": no option of SGLang's is spelled with '_', and its parser exits on it
    // ("unrecognized arguments"); where the dashed spelling is a flag the size depends on, say so.
    if (!*full && key.find('_') != std::string::npos) {
      std::string dashed = key;
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      if (BeginsARead(dashed)) {
        return MakeError(Code::kInvalidInput, key + " is no option of SGLang " + std::string(kSglangOptionsVersion) +
                                                  "'s parser, which refuses the launch (unrecognized arguments); " +
                                                  "it spells the flag " + dashed);
      }
    }
  }
  return merged;
}

constexpr LauncherRow kLaunchers[] = {{"sglang", "serve"}, {"-m", "sglang.launch_server"}};

}  // namespace

const ServerRow kSglangRow = {Server::kSglang,          "sglang", "SGLang", kLaunchers, {}, kFlags, kEnv,
                              NumberParser::kPythonInt, Prepare,  Settle,   PlanSglang};

}  // namespace shmguard::servers
