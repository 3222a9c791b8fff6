// Inference servers: which one a container launches (vLLM, SGLang, TGI, Triton / TensorRT-LLM,
// Ray), read from its command, args and env as the kubelet and a shell would expand them and as
// the server's own parser reads them, and the /dev/shm its own segments take, term by term
// (docs/sources.md §10). Each server is one row (src/core/servers/): its launchers, flags,
// variables and plan. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/container_config.h"
#include "core/values/json_node.h"
#include "core/values/result.h"

namespace shmguard {

enum class Server { kNone, kVllm, kSglang, kTgi, kTriton, kRay };
// "vllm", "sglang", "tgi", "triton", "ray"; "" for kNone.
std::string_view ServerName(Server s);
// "vLLM", "SGLang", "TGI", "Triton", "Ray"; "" for kNone.
std::string_view ServerTitle(Server s);
// "vllm" ... -> the server; nullopt for anything else.
std::optional<Server> ParseServer(std::string_view name);

// vLLM's --distributed-executor-backend, and --data-parallel-backend's effect on it.
enum class VllmExecutor {
  kDefault,           // not given: uni for one worker in all, else ray with --data-parallel-backend ray, else mp
  kMp,                // MultiprocExecutor
  kUni,               // UniProcExecutor: one worker in the engine's process, no queues
  kRay,               // RayExecutorV2, a MultiprocExecutor whose workers are Ray actors
  kExternalLauncher,  // torchrun and the like start every worker: no queues
  kOther,             // a class path: read as mp, the larger
};
// vLLM's --kv-offloading-backend.
enum class KvOffloadBackend { kNative, kLmcache };

// What a server's launch says about its size. Counts are as launched (the server's defaults where
// a flag is absent); `read` lists every flag and variable read, as written
// ("--tensor-parallel-size=8"), for the findings.
struct ServerLaunch {
  Server server = Server::kNone;
  std::string launched_by;  // "vllm serve", "python3 -m sglang.launch_server", "image vllm/vllm-openai"
  std::string pointer;      // where its command is: ".../containers/0/command" (or /args, /image)
  // Parallelism. An engine (a vLLM or SGLang replica) has tensor × pipeline × prefill-context
  // workers; data parallelism runs that many engines.
  int64_t tensor_parallel = 1, pipeline_parallel = 1, data_parallel = 1;
  int64_t prefill_context_parallel = 1;        // vLLM -pcp: multiplies an engine's workers
  int64_t decode_context_parallel = 1;         // vLLM -dcp, SGLang --dcp-size: groups within TP
  std::optional<int64_t> data_parallel_local;  // vLLM --data-parallel-size-local: engines here
  int64_t nnodes = 1;                          // --nnodes (vLLM, SGLang)
  std::optional<int64_t> world_size;           // TGI's shards, Triton's ranks (mpirun -n, --world_size)
  // vLLM: how data-parallel engines are balanced, where its API servers run, its executor.
  bool dp_external_lb = false;  // --data-parallel-external-lb, or a --data-parallel-rank
  bool dp_hybrid_lb = false;    // --data-parallel-hybrid-lb, or a --data-parallel-start-rank
  bool dp_backend_ray = false;  // --data-parallel-backend ray
  bool headless = false;        // --headless: engines only, no API server
  std::optional<int64_t> api_server_count;
  VllmExecutor executor = VllmExecutor::kDefault;
  // SGLang's attention groups inside a TP group: --attn-dp-size (or the older --dp-size N
  // --enable-dp-attention), --attn-cp-size. They split the TP group's ranks; they add no
  // processes. --enable-pdmux duplicates each TP group (PD multiplexing).
  int64_t attention_dp = 1, attention_cp = 1;
  bool dp_attention = false;  // SGLang --enable-dp-attention
  bool pdmux = false;
  bool mm_cache_shm = false;                  // vLLM --mm-processor-cache-type shm
  int64_t mm_cache_bytes = int64_t{4} << 30;  // vLLM --mm-processor-cache-gb (GiB, default 4)
  int64_t kv_offload_bytes = 0;               // vLLM --kv-offloading-size (GiB), a shortcut for the connector below
  // vLLM --kv-transfer-config and --ec-transfer-config as given (JSON, the dotted form merged), and
  // what they name: OffloadingConnector's cpu_bytes_to_use (alone or inside a MultiConnector;
  // vllm/config/vllm.py:1166-1175 makes --kv-offloading-size this connector) and ECCPUConnector's
  // ec_cpu_bytes.
  std::string kv_transfer_config, ec_transfer_config;
  int64_t kv_connector_offload_bytes = 0;
  int64_t ec_cache_bytes = 0;
  int64_t node_rank = 0;  // vLLM --node-rank: 0 leads an engine that spans nodes
  // vLLM --data-parallel-multi-port-external-lb: an API server, and a multimodal cache, per
  // local data-parallel rank.
  bool dp_multi_port_external_lb = false;
  // vLLM --config FILE, as written, when its flags could not be read (a file in the image): the
  // counts it may set are taken as the pod's GPUs, as for `unread`.
  std::string config_file;
  KvOffloadBackend kv_offload_backend = KvOffloadBackend::kNative;
  bool simple_kv_offload = false;              // vLLM VLLM_USE_SIMPLE_KV_OFFLOAD=1
  bool tensor_arena = false;                   // vLLM --enable-shm-tensor-arena
  bool rocm = false;                           // the container requests amd.com/gpu
  int64_t mq_chunk_bytes = int64_t{16} << 20;  // vLLM VLLM_MQ_MAX_CHUNK_BYTES_MB (default 16)
  bool mq_broadcaster = true;                  // SGLang SGLANG_USE_MESSAGE_QUEUE_BROADCASTER
  bool shm_cpu_offload = false;                // SGLang --offload-mode shm_cpu: weights in /dev/shm
  // Triton's Python backend: --backend-config=python,shm-default-byte-size=N, the size each
  // model instance's region starts at (1 MiB by default).
  int64_t python_shm_default_bytes = int64_t{1} << 20;
  std::optional<bool> sharded;                // TGI --sharded (env SHARDED)
  bool ray_started = false;                   // `ray start` runs in the container too
  std::optional<int64_t> object_store_bytes;  // ray start --object-store-memory
  int64_t container_gpus = 0;                 // the GPUs its own container requests (0: none of its own)
  std::vector<std::string> read;
  // The count flags whose value is a variable the spec does not set (a valueFrom, or the
  // shell's own): "-tp=$(TP)". Each is taken as the GPUs the pod has for it (servers/).
  std::vector<std::string> unread;
};

// The server `container` launches, or nullopt. Its command and args are read as the kubelet
// expands them ($(VAR) from the container's env) and as a shell splits a `sh -c` string ($VAR
// and ${VAR} from the env too; quotes and line continuations dropped); an image whose entrypoint
// is the server (vllm/vllm-openai, text-generation-inference) counts when the container sets no
// command. A launch whose expansion passes its budget (servers/launch_text.h) is not read:
// kOutOfRange. Fails with kInvalidInput naming the flag when a count or size it reads is one the
// server's parser refuses or out of range ("--tensor-parallel-size=eight").
// `config`: what ConfigMaps give the container (values/container_config.h), when known: envFrom's variables
// under the env's, and the files a --config flag names.
Result<std::optional<ServerLaunch>> ReadServerLaunch(JsonNode container, std::string_view pointer,
                                                     const ContainerConfig* config = nullptr);

// The launch `args` would give `server` (as the words after `vllm serve M`, or `ray start`):
// what `shmguard plan --server` reads, with the same rows as a container's launch. Fails with
// kInvalidInput naming a flag the server's row does not read, or a malformed value.
Result<ServerLaunch> ReadServerArgs(Server server, const std::vector<std::string>& args);

// Every flag `server` reads, as its parser spells it first ("--tensor-parallel-size").
std::vector<std::string_view> ServerFlagNames(Server server);

// What one segment is (words: ServerTermsText).
enum class ServerSegment {
  kExecutorBroadcastQueue,  // vLLM: the executor's queue to its workers
  kWorkerResponseQueue,     // vLLM: a worker's queue back to the executor (one node)
  kWorkerReplyBroadcaster,  // vLLM: a worker's queue back when an engine spans nodes
  kInnerDpBroadcaster,      // vLLM: an engine's broadcaster to its workers on other nodes (DP > 1)
  kTensorArena,             // vLLM: the shm tensor arena on the executor's queue
  kTpBroadcaster,           // vLLM, SGLang: a tensor-parallel group's broadcaster
  kDcpBroadcaster,          // vLLM, SGLang: a decode-context-parallel group's broadcaster
  kAttentionTpBroadcaster,  // SGLang: an attention tensor-parallel group's broadcaster
  kAttentionCpBroadcaster,  // SGLang: an attention context-parallel group's broadcaster
  kPdmuxTpBroadcaster,      // SGLang: PD multiplexing's duplicate TP group's broadcaster
  kMultimodalCache,         // vLLM: the multimodal processor cache
  kKvOffload,               // vLLM: the CPU KV-cache offload region
  kRayObjectStore,          // Ray's object store × 1.1
  kEncoderCache,            // vLLM: ECCPUConnector's encoder-cache region
  kPythonBackendRegion,     // Triton: a Python backend model instance's region
  kSegmentFlags,            // the segments' flag bytes and page rounding
};

// One term of a server's /dev/shm: `count` segments of `each` bytes.
struct ServerTerm {
  ServerSegment segment;
  int64_t count = 1;
  int64_t each = 0;
  // kRayObjectStore: the store, and 0 for --object-store-memory or the memory limit Ray's
  // default took 30% of; kSegmentFlags: how many segments.
  int64_t basis = 0;
  int64_t memory_limit = 0;
};

struct ServerPlan {
  Server server = Server::kNone;
  int64_t procs = 1;        // the server's GPU processes in this pod
  bool multi_node = false;  // its ranks span pods: NCCL's network proxy
  std::vector<ServerTerm> terms;
  int64_t bytes = 0;  // the terms' sum
  // What it may put in /dev/shm that no launch flag bounds ("" none): SGLang's multimodal
  // features, a Ray object store with no memory limit to take Ray's default share of, Triton's
  // Python backend regions.
  std::string unbounded;
  // The segments vLLM makes without checking /dev/shm's free space first, in words ("" none): its
  // multimodal cache (a shortfall is a Bus error under load), ECCPUConnector's region (pre-faulted:
  // a Bus error at start); not a refusal at start as for its queues.
  std::string unchecked;
};

// The plan of `launch` in a pod of `gpus` GPUs and `memory_limit` (Ray's default store is a
// share of it). Fails with kInvalidInput when a term overflows.
Result<ServerPlan> PlanServer(const ServerLaunch& launch, int64_t gpus, std::optional<int64_t> memory_limit);

// The flags and variables the launch was read from, as written, joined: "--tensor-parallel-size=8,
// env VLLM_MQ_MAX_CHUNK_BYTES_MB=100"; "" when none.
std::string ServerFlagsText(const ServerLaunch& launch);

// The terms in words: "160Mi executor broadcast queue + 8 × 240Mi worker response queues".
std::string ServerTermsText(const ServerPlan& plan);

}  // namespace shmguard
