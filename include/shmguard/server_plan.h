// Inference servers: which one a container launches (vLLM, SGLang, TGI, Triton / TensorRT-LLM,
// Ray), read from its command, args and env as the kubelet and a shell would expand them, and
// the /dev/shm its own segments take, term by term (docs/sources.md §10). Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmguard/json_node.h"
#include "shmguard/result.h"

namespace shmguard {

enum class Server { kNone, kVllm, kSglang, kTgi, kTriton, kRay };
// "vllm", "sglang", "tgi", "triton", "ray"; "" for kNone.
std::string_view ServerName(Server s);
// "vLLM", "SGLang", "TGI", "Triton", "Ray"; "" for kNone.
std::string_view ServerTitle(Server s);
// "vllm" ... -> the server; nullopt for anything else.
std::optional<Server> ParseServer(std::string_view name);

// What a server's launch says about its size. Counts are as launched (defaults where a flag is
// absent); `read` lists every flag and variable read, as written ("--tensor-parallel-size=8"),
// for the findings.
struct ServerLaunch {
  Server server = Server::kNone;
  std::string launched_by;  // "vllm serve", "python3 -m sglang.launch_server", "image vllm/vllm-openai"
  std::string pointer;      // where its command is: ".../containers/0/command" (or /args, /image)
  int64_t tensor_parallel = 1, pipeline_parallel = 1, data_parallel = 1;
  std::optional<int64_t> data_parallel_local;  // vLLM --data-parallel-size-local
  int64_t nnodes = 1;                          // --nnodes (vLLM, SGLang)
  std::optional<int64_t> world_size;           // TGI's shards, Triton's ranks (mpirun -n, --world_size)
  // SGLang's attention groups inside a TP group: --attn-dp-size (or the older --dp-size N
  // --enable-dp-attention), --attn-cp-size, --dcp-size. They split the TP group's ranks; they
  // add no processes.
  int64_t attention_dp = 1, attention_cp = 1, decode_cp = 1;
  bool mm_cache_shm = false;                   // vLLM --mm-processor-cache-type shm
  int64_t mm_cache_bytes = int64_t{4} << 30;   // vLLM --mm-processor-cache-gb (GiB, default 4)
  int64_t kv_offload_bytes = 0;                // vLLM --kv-offloading-size (GiB)
  bool tensor_arena = false;                   // vLLM --enable-shm-tensor-arena
  bool rocm = false;                           // the container requests amd.com/gpu
  int64_t mq_chunk_bytes = int64_t{16} << 20;  // vLLM VLLM_MQ_MAX_CHUNK_BYTES_MB (default 16)
  bool mq_broadcaster = true;                  // SGLang SGLANG_USE_MESSAGE_QUEUE_BROADCASTER
  bool ray_backend = false;                    // vLLM --distributed-executor-backend ray
  bool ray_started = false;                    // `ray start` runs in the container too
  std::optional<int64_t> object_store_bytes;   // ray start --object-store-memory
  std::vector<std::string> read;
};

// The server `container` launches, or nullopt. Its command and args are read as the kubelet
// expands them ($(VAR) from the container's env) and as a shell splits a `sh -c` string ($VAR
// and ${VAR} from the env too; quotes and line continuations dropped); an image whose entrypoint
// is the server (vllm/vllm-openai, text-generation-inference) counts when the container sets no
// command. Fails with kInvalidInput naming the flag when a count or size it reads is malformed
// or out of range ("--tensor-parallel-size=$TP" whose TP is not set).
Result<std::optional<ServerLaunch>> ReadServerLaunch(JsonNode container, std::string_view pointer);

// One term of a server's /dev/shm: `count` segments of `each` bytes, and what they are.
struct ServerTerm {
  std::string what;  // "executor broadcast queue", "worker response queues"
  int64_t count = 1;
  int64_t each = 0;
};

struct ServerPlan {
  Server server = Server::kNone;
  int64_t procs = 1;        // the server's GPU processes in this pod
  bool multi_node = false;  // its ranks span pods: NCCL's network proxy
  std::vector<ServerTerm> terms;
  int64_t bytes = 0;  // the terms' sum
  // What it may put in /dev/shm that no launch flag bounds ("" none): SGLang's multimodal
  // features, a Ray object store with no memory limit to take Ray's default share of.
  std::string unbounded;
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
