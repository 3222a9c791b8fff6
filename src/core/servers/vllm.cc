// vLLM's row: its launchers, the flags and variables that size it, and the /dev/shm segments
// vLLM 0.33.0 makes for a launch, term by term. Every line cited is vllm-0.33.0.tar.gz
// (docs/sources.md §10): shm_broadcast.py is vllm/distributed/device_communicators/
// shm_broadcast.py, multiproc_executor.py and ray_executor_v2.py are in vllm/v1/executor/.
#include <algorithm>

#include "core/servers/internal/launch_text.h"
#include "core/servers/internal/server_rows.h"
#include "core/servers/internal/vllm_words.h"

namespace shmguard::servers {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20, kGiB = int64_t{1} << 30;

// A MessageQueue's ring: max_chunks chunks of max_chunk_bytes, then (1 + readers) flag bytes per
// chunk (ShmRingBuffer, shm_broadcast.py:338-342). It is made only when some reader is local
// (n_local_reader > 0, :519-523).
constexpr int64_t kMqChunks = 10;
// MessageQueue's default chunk, which a worker's response queue takes: 24 MiB
// (shm_broadcast.py:503-504).
constexpr int64_t kResponseChunkBytes = 24 * kMiB;
// A group's broadcaster, and a worker's reply queue when an engine spans nodes:
// create_from_process_group(cpu_group, 1 << 22, 6) (vllm/distributed/parallel_state.py:613-625,
// :627-638), 6 chunks of 4 MiB.
constexpr int64_t kGroupChunks = 6, kGroupChunkBytes = int64_t{1} << 22;
// The shm tensor arena: 8 slots of 256 MiB, then (1 + readers) flag bytes per slot
// (vllm/distributed/device_communicators/shm_tensor_arena.py:54-55, :99).
constexpr int64_t kArenaSlots = 8, kArenaSlotBytes = 256 * kMiB;
// The multimodal cache's ring holds a 32-byte secret before its data
// (vllm/distributed/device_communicators/shm_object_storage.py:128-141).
constexpr int64_t kMmCacheSecretBytes = 32;

// How the launch lays engines and workers out, seen from the pod that runs `vllm serve`.
struct Layout {
  int64_t world = 1;             // an engine's workers: TP × PP × PCP (vllm/config/parallel.py:963-968)
  int64_t engines = 1;           // engines whose executor (or a share of whose workers) runs here
  int64_t ranks = 1;             // workers here
  int64_t nodes_per_engine = 1;  // nnodes_within_dp (vllm/config/parallel.py:812-836)
  bool multi_node = false;       // some rank of the launch is in another pod
  VllmExecutor executor = VllmExecutor::kMp;
};

// --distributed-executor-backend when it is not given: uni for one worker in all, ray with
// --data-parallel-backend ray, else mp (vllm/config/parallel.py:1081-1119; a Ray placement group
// vLLM may find at run time is not in the spec, and Ray's executor makes the same queues).
VllmExecutor ResolveExecutor(const ServerLaunch& l, int64_t world) {
  if (l.executor != VllmExecutor::kDefault && l.executor != VllmExecutor::kOther) return l.executor;
  if (l.executor == VllmExecutor::kOther) return VllmExecutor::kMp;
  if (world * l.data_parallel == 1) return VllmExecutor::kUni;
  return l.dp_backend_ray ? VllmExecutor::kRay : VllmExecutor::kMp;
}

Layout LayOut(const ServerLaunch& l, int64_t gpus) {
  Layout o;
  o.world = l.tensor_parallel * l.pipeline_parallel * l.prefill_context_parallel;
  const int64_t dp = l.data_parallel;
  // Engines in this pod (vllm/engine/arg_utils.py:2398-2535): one for an external load
  // balancer; --data-parallel-size-local; with --nnodes, each node's share of DP × world; else
  // every engine.
  int64_t dp_local = dp;
  if (l.dp_external_lb) {
    dp_local = 1;
  } else if (l.dp_multi_port_external_lb) {
    // A supervisor starts an external-LB rank per local rank, each one engine with its own API
    // server (entrypoints/launchers/dp_supervisor.py:118-135).
    dp_local = l.data_parallel_local.value_or(dp);
  } else if (l.data_parallel_local) {
    dp_local = *l.data_parallel_local;
  } else if (l.nnodes > 1) {
    dp_local = std::max<int64_t>(1, dp * o.world / l.nnodes / o.world);
  }
  dp_local = std::clamp<int64_t>(dp_local, 1, dp);
  if (l.nnodes > 1) {
    const int64_t node_groups = std::max<int64_t>(1, dp / dp_local);
    o.nodes_per_engine = std::max<int64_t>(1, l.nnodes / node_groups);
  }
  if (o.nodes_per_engine > 1) {  // an engine spans nodes: this pod holds its leader's share
    o.engines = 1;
    o.ranks = std::max<int64_t>(1, o.world / o.nodes_per_engine);
  } else {
    o.engines = dp_local;
    o.ranks = dp_local * o.world;
  }
  o.multi_node = o.nodes_per_engine > 1 || dp_local < dp;
  if (gpus > 0 && o.ranks > gpus) {  // more ranks than GPUs: the rest are in the group's other pods
    o.ranks = gpus;
    o.engines = std::max<int64_t>(1, gpus / o.world);
    if (gpus < o.world) o.nodes_per_engine = std::max<int64_t>(o.nodes_per_engine, 2);
    o.multi_node = true;
  }
  o.executor = ResolveExecutor(l, o.world);
  return o;
}

// Broadcasters of groups of `size` ranks with their writer here and a reader beside it: every
// whole group here, or the one group this pod leads when a group spans pods.
int64_t LocalGroups(int64_t ranks, int64_t size) {
  if (size <= 1) return 0;
  return ranks >= size ? ranks / size : ranks >= 2 ? 1 : 0;
}

// The API servers the launch runs (vllm/entrypoints/cli/serve.py:107-130): none headless; one
// for an external load balancer; --data-parallel-size-local for a hybrid one; else one per
// engine.
int64_t ApiServers(const ServerLaunch& l) {
  if (l.headless) return 0;
  if (l.api_server_count) return *l.api_server_count;
  if (l.dp_external_lb || l.dp_multi_port_external_lb) return 1;
  if (l.dp_hybrid_lb) return l.data_parallel_local.value_or(1);
  return l.data_parallel;
}

Result<ServerPlan> PlanVllm(const ServerLaunch& l, int64_t gpus, std::optional<int64_t> memory_limit) {
  ServerLaunch launch = l;
  FillUnread(gpus, {&launch.tensor_parallel, &launch.data_parallel, &launch.pipeline_parallel,
                    &launch.prefill_context_parallel, &launch.decode_context_parallel, &launch.nnodes});
  const Layout o = LayOut(launch, gpus);
  PlanBuilder b;
  b.plan.procs = o.ranks;
  b.plan.multi_node = o.multi_node;
  const bool one_node = o.nodes_per_engine == 1;
  // Where an engine spans nodes, only its first node's pod leads it (node_rank_within_dp == 0,
  // multiproc_executor.py:161-185): a worker node (--headless --node-rank 1) holds no executor
  // queue, and its workers' replies go to queues on the leader's node.
  const bool leader = one_node || !launch.headless || launch.node_rank % o.nodes_per_engine == 0;
  const bool queues = (o.executor == VllmExecutor::kMp || o.executor == VllmExecutor::kRay) && leader;
  // Each engine's leader makes its executor's queue to the workers on its node
  // (multiproc_executor.py:161-185; Ray's, a subclass, the same at ray_executor_v2.py:239,
  // 329-339), of VLLM_MQ_MAX_CHUNK_BYTES_MB chunks (vllm/envs.py:1858-1860).
  if (queues && o.ranks > 0) {
    const int64_t local = std::max<int64_t>(1, o.ranks / o.engines);
    b.Add(ServerSegment::kExecutorBroadcastQueue, o.engines, kMqChunks * launch.mq_chunk_bytes,
          kMqChunks * (1 + local));
    if (one_node || o.executor == VllmExecutor::kRay) {
      // A response queue from each worker on the leader's node: MessageQueue(1, 1) with its
      // defaults (multiproc_executor.py:718-726; ray_executor_v2.py:199-212).
      b.Add(ServerSegment::kWorkerResponseQueue, o.ranks, kMqChunks * kResponseChunkBytes, kMqChunks * 2);
    } else {
      // An engine over nodes: each worker's reply goes through a single-reader queue of 6 × 4 MiB,
      // in shared memory on the reader's node (multiproc_executor.py:727-745,
      // shm_broadcast.py:1028-1070), and with DP > 1 the engine's inner-DP group has a
      // broadcaster (vllm/distributed/parallel_state.py:2023-2036).
      b.Add(ServerSegment::kWorkerReplyBroadcaster, o.ranks, kGroupChunks * kGroupChunkBytes, kGroupChunks * 2);
      if (launch.data_parallel > 1) {
        b.Add(ServerSegment::kInnerDpBroadcaster, o.engines, kGroupChunks * kGroupChunkBytes,
              kGroupChunks * (1 + local));
      }
    }
    // The tensor arena rides on mp's executor queue when every reader is local
    // (shm_broadcast.py:529-532; Ray's executor does not ask for it).
    if (launch.tensor_arena && o.executor == VllmExecutor::kMp && one_node) {
      b.Add(ServerSegment::kTensorArena, o.engines, kArenaSlots * kArenaSlotBytes, kArenaSlots * (1 + local));
    }
  }
  // Group broadcasters (GroupCoordinator, parallel_state.py:565-568): each tensor-parallel group
  // (:2175-2181) and each decode-context-parallel group (:2250-2265) of more than one rank.
  const int64_t tp_groups = LocalGroups(o.ranks, launch.tensor_parallel);
  b.Add(ServerSegment::kTpBroadcaster, tp_groups, kGroupChunks * kGroupChunkBytes,
        kGroupChunks * std::min(launch.tensor_parallel, o.ranks));
  const int64_t dcp_groups = LocalGroups(o.ranks, launch.decode_context_parallel);
  b.Add(ServerSegment::kDcpBroadcaster, dcp_groups, kGroupChunks * kGroupChunkBytes,
        kGroupChunks * std::min(launch.decode_context_parallel, o.ranks));
  // The multimodal processor cache, made by the one API server when it alone serves the engines
  // (vllm/multimodal/cache/factories.py:36-45; shm.py:75-86). vLLM does not check /dev/shm's
  // free space for it (shm_object_storage.py:139): a shortfall is a Bus error under load.
  // With --data-parallel-multi-port-external-lb each local rank's own API server makes one
  // (factories.py:36-45 holds for each: one API server, an external balancer).
  const bool ipc_cache = ApiServers(launch) == 1 &&
                         (launch.data_parallel == 1 || launch.dp_external_lb || launch.dp_multi_port_external_lb);
  if (launch.mm_cache_shm && launch.mm_cache_bytes > 0 && ipc_cache) {
    b.Add(ServerSegment::kMultimodalCache, launch.dp_multi_port_external_lb ? o.engines : 1, launch.mm_cache_bytes,
          kMmCacheSecretBytes);
    b.plan.unchecked = "its multimodal cache is made";
  }
  // CPU KV offload, native backend: one region per engine, in /dev/shm on CUDA and XPU
  // (vllm/config/vllm.py:1167-1175; vllm/v1/kv_offload/cpu/spec.py:176-181,
  // shared_offload_region.py:128, 160-170). Not with VLLM_USE_SIMPLE_KV_OFFLOAD, whose buffers
  // are private tensors (vllm/v1/simple_kv_offload/worker.py:235-248), nor LMCache's, whose
  // server keeps the cache (vllm/config/vllm.py:1176-1181), nor on ROCm.
  // The same region when --kv-transfer-config names OffloadingConnector itself (alone or in a
  // MultiConnector; --kv-offloading-size, when given, replaces the connector, vllm.py:1158-1175).
  // Every node of an engine makes its own: its workers create the file on their node's /dev/shm.
  int64_t offload = 0;
  if (launch.kv_offload_bytes > 0) {
    if (launch.kv_offload_backend == KvOffloadBackend::kNative && !launch.simple_kv_offload) {
      offload = launch.kv_offload_bytes;
    }
  } else {
    offload = launch.kv_connector_offload_bytes;
  }
  if (offload > 0 && !launch.rocm) b.Add(ServerSegment::kKvOffload, o.engines, offload);
  // ECCPUConnector's encoder-cache region, one per engine on each of its nodes, pre-faulted at
  // start with no free-space check (ec_shared_region.py:93-131).
  if (launch.ec_cache_bytes > 0) {
    b.Add(ServerSegment::kEncoderCache, o.engines, launch.ec_cache_bytes);
    b.plan.unchecked +=
        std::string(b.plan.unchecked.empty() ? "" : ", and ") + "its encoder-cache region is made and pre-faulted";
  }
  if (o.executor == VllmExecutor::kRay || launch.ray_started) AddRayStore(launch, memory_limit, b);
  return b.Finish();
}

void SetExecutor(ServerLaunch& l, const FlagRead& r) {
  if (r.word == "mp") {
    l.executor = VllmExecutor::kMp;
  } else if (r.word == "uni") {
    l.executor = VllmExecutor::kUni;
  } else if (r.word == "ray") {
    l.executor = VllmExecutor::kRay;
  } else if (r.word == "external_launcher") {
    l.executor = VllmExecutor::kExternalLauncher;
  } else {
    l.executor = VllmExecutor::kOther;
  }
}

constexpr FlagRow kFlags[] = {
    {{"--tensor-parallel-size", "-tp"}, FlagValue::kCount, SetCount<&ServerLaunch::tensor_parallel>},
    {{"--pipeline-parallel-size", "-pp"}, FlagValue::kCount, SetCount<&ServerLaunch::pipeline_parallel>},
    {{"--prefill-context-parallel-size", "-pcp"}, FlagValue::kCount, SetCount<&ServerLaunch::prefill_context_parallel>},
    {{"--decode-context-parallel-size", "-dcp"}, FlagValue::kCount, SetCount<&ServerLaunch::decode_context_parallel>},
    {{"--data-parallel-size", "-dp"}, FlagValue::kCount, SetCount<&ServerLaunch::data_parallel>},
    {{"--data-parallel-size-local", "-dpl"}, FlagValue::kCount, SetOptionalCount<&ServerLaunch::data_parallel_local>},
    {{"--data-parallel-rank", "-dpn"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead&) { l.dp_external_lb = true; }},
    {{"--data-parallel-start-rank", "-dpr"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead&) { l.dp_hybrid_lb = true; }},
    {{"--data-parallel-external-lb", "-dpe"},
     FlagValue::kSwitch,
     [](ServerLaunch& l, const FlagRead& r) { l.dp_external_lb = l.dp_external_lb || r.flag; }},
    {{"--data-parallel-hybrid-lb", "-dph"},
     FlagValue::kSwitch,
     [](ServerLaunch& l, const FlagRead& r) { l.dp_hybrid_lb = l.dp_hybrid_lb || r.flag; }},
    {{"--data-parallel-backend", "-dpb"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead& r) { l.dp_backend_ray = r.word == "ray"; }},
    {{"--nnodes", "-n"}, FlagValue::kCount, SetCount<&ServerLaunch::nnodes>},
    {{"--headless"}, FlagValue::kSwitch, [](ServerLaunch& l, const FlagRead& r) { l.headless = r.flag; }},
    {{"--node-rank", "-r"}, FlagValue::kCount, SetCount<&ServerLaunch::node_rank>, {}, 0},
    {{"--data-parallel-multi-port-external-lb"},
     FlagValue::kSwitch,
     [](ServerLaunch& l, const FlagRead& r) { l.dp_multi_port_external_lb = r.flag; }},
    {{"--kv-transfer-config"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead& r) { l.kv_transfer_config = std::string(r.word); }},
    {{"--ec-transfer-config"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead& r) { l.ec_transfer_config = std::string(r.word); }},
    {{"--config"}, FlagValue::kWord, [](ServerLaunch& l, const FlagRead& r) { l.config_file = std::string(r.word); }},
    {{"--api-server-count", "-asc"}, FlagValue::kCount, SetOptionalCount<&ServerLaunch::api_server_count>, {}, 0},
    {{"--distributed-executor-backend"}, FlagValue::kWord, SetExecutor},
    {{"--mm-processor-cache-type"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead& r) { l.mm_cache_shm = r.word == "shm"; }},
    {{"--mm-processor-cache-gb"},
     FlagValue::kGib,
     [](ServerLaunch& l, const FlagRead& r) { l.mm_cache_bytes = r.count; }},
    {{"--kv-offloading-size"},
     FlagValue::kGib,
     [](ServerLaunch& l, const FlagRead& r) { l.kv_offload_bytes = r.count; }},
    {{"--kv-offloading-backend"},
     FlagValue::kWord,
     [](ServerLaunch& l, const FlagRead& r) {
       l.kv_offload_backend = r.word == "lmcache" ? KvOffloadBackend::kLmcache : KvOffloadBackend::kNative;
     }},
    {{"--enable-shm-tensor-arena"},
     FlagValue::kSwitch,
     [](ServerLaunch& l, const FlagRead& r) { l.tensor_arena = r.flag; }},
};

constexpr EnvRow kEnv[] = {
    // int(os.getenv("VLLM_MQ_MAX_CHUNK_BYTES_MB", "16")) (vllm/envs.py:1858-1860).
    {"VLLM_MQ_MAX_CHUNK_BYTES_MB",
     [](ServerLaunch& l, std::string_view v) {
       auto n = ParsePythonInt(v);
       if (!n || *n < 1 || *n > 1 << 20) return false;
       l.mq_chunk_bytes = *n << 20;
       return true;
     },
     "a whole number of MiB from 1 to 1048576"},
    // bool(int(os.getenv("VLLM_USE_SIMPLE_KV_OFFLOAD", "0"))) (vllm/envs.py:2241-2242).
    {"VLLM_USE_SIMPLE_KV_OFFLOAD",
     [](ServerLaunch& l, std::string_view v) {
       auto n = ParsePythonInt(v);
       if (!n) return false;
       l.simple_kv_offload = *n != 0;
       return true;
     },
     "a whole number (0 or 1)"},
};

constexpr LauncherRow kLaunchers[] = {
    {"vllm", "serve"},
    {"-m", "vllm.entrypoints.openai.api_server"},
    {"-m", "vllm.entrypoints.api_server"},
    {"-m", "dynamo.vllm"},
};
constexpr std::string_view kImages[] = {"vllm-openai"};

}  // namespace

const ServerRow kVllmRow = {Server::kVllm,    "vllm",     "vLLM",  kLaunchers,
                            kImages,          kFlags,     kEnv,    NumberParser::kPythonInt,
                            PrepareVllmWords, SettleVllm, PlanVllm};

}  // namespace shmguard::servers
