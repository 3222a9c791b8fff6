// PlanServer: each server's own /dev/shm segments, from the servers' source as docs/sources.md
// §10 cites it; ServerTermsText words them.
#include "shmguard/server_plan.h"

#include <algorithm>

#include "shmguard/quantity.h"
#include "shmguard/shm_plan.h"

namespace shmguard {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// vLLM's MessageQueue: a ring of max_chunks (10) chunks of max_chunk_bytes; a worker's
// response queue takes the default chunk, 24 MiB (vllm/distributed/device_communicators/
// shm_broadcast.py, MessageQueue.__init__; ShmRingBuffer's size is (chunk + 1 + readers) ×
// chunks, the flag bytes left out here).
constexpr int64_t kMqChunks = 10;
constexpr int64_t kVllmResponseChunkBytes = 24 * kMiB;
// A tensor-parallel group's broadcaster: MessageQueue.create_from_process_group(cpu_group,
// 1 << 22, 6), 6 chunks of 4 MiB (vLLM vllm/distributed/parallel_state.py and SGLang
// python/sglang/srt/distributed/parallel_state.py, GroupCoordinator).
constexpr int64_t kTpBroadcasterBytes = 6 * (int64_t{1} << 22);
// vLLM's shm tensor arena on the executor's broadcast queue (--enable-shm-tensor-arena): 8
// slots of 256 MiB, checked against /dev/shm's free space when it is made
// (vllm/distributed/device_communicators/shm_tensor_arena.py, _ARENA_SLOTS, _ARENA_SLOT_BYTES).
constexpr int64_t kTensorArenaBytes = 8 * 256 * kMiB;
// Ray's default object store: 30 % of the memory it sees, at most 200e9 bytes
// (python/ray/_private/ray_constants.py DEFAULT_OBJECT_STORE_MEMORY_PROPORTION and
// DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES); its advice for /dev/shm is 1.1 × the store
// (python/ray/_private/services.py determine_plasma_store_config).
constexpr int64_t kRayStoreMaxBytes = 200'000'000'000;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The server's processes in this pod: all of them, unless they span pods (--nnodes, or more
// ranks than the pod has GPUs: the rest run in the other pods of its group).
int64_t LocalProcs(int64_t world, int64_t nnodes, int64_t gpus, bool& multi_node) {
  int64_t local = world;
  if (nnodes > 1) {
    local = CeilDiv(world, nnodes);
    multi_node = true;
  }
  if (gpus > 0 && local > gpus) {
    local = gpus;
    multi_node = true;
  }
  return std::max<int64_t>(local, 1);
}

void AddRayStore(const ServerLaunch& l, std::optional<int64_t> memory_limit, ServerPlan& p) {
  int64_t store = 0;
  std::string what = "Ray object store";
  if (l.object_store_bytes) {
    store = *l.object_store_bytes;
    what += " (--object-store-memory " + HumanBytes(store) + ")";
  } else if (memory_limit) {
    store = std::min(*memory_limit / 10 * 3, kRayStoreMaxBytes);
    what += " (Ray's default: 30% of the " + FormatBytes(*memory_limit) + " memory limit)";
  } else {
    p.unbounded = "a Ray object store with no memory limit: Ray takes 30% of the node's memory";
    return;
  }
  // Ray's 1.1 ×, rounded up to a whole MiB.
  const int64_t each = CeilDiv(CeilDiv(store, 10) * 11, kMiB) * kMiB;
  p.terms.push_back({what + " × 1.1", 1, each});
}

}  // namespace

Result<ServerPlan> PlanServer(const ServerLaunch& l, int64_t gpus, std::optional<int64_t> memory_limit) {
  ServerPlan p;
  p.server = l.server;
  const int64_t per_engine = l.tensor_parallel * l.pipeline_parallel;
  switch (l.server) {
    case Server::kVllm: {
      const int64_t world = per_engine * l.data_parallel;
      if (l.data_parallel_local) {
        p.procs = std::max<int64_t>(1, std::min(world, *l.data_parallel_local * per_engine));
        p.multi_node = *l.data_parallel_local < l.data_parallel || l.nnodes > 1;
        if (gpus > 0 && p.procs > gpus) p.procs = gpus;
      } else {
        p.procs = LocalProcs(world, l.nnodes, gpus, p.multi_node);
      }
      const int64_t engines = std::max<int64_t>(1, p.procs / per_engine);
      // The multiprocessing executor (vllm/v1/executor/multiproc_executor.py) runs when an
      // engine has more than one worker and Ray is not its backend: a broadcast queue to its
      // workers, of VLLM_MQ_MAX_CHUNK_BYTES_MB chunks, and a response queue from each worker.
      if (per_engine > 1 && !l.ray_backend) {
        p.terms.push_back({"executor broadcast queue", engines, kMqChunks * l.mq_chunk_bytes});
        p.terms.push_back({"worker response queue", p.procs, kMqChunks * kVllmResponseChunkBytes});
        // Only where every reader of the queue is in the pod (MessageQueue: n_remote_reader == 0).
        if (l.tensor_arena && !p.multi_node) p.terms.push_back({"shm tensor arena", engines, kTensorArenaBytes});
      }
      if (l.tensor_parallel > 1) {
        p.terms.push_back(
            {"tensor-parallel broadcaster", std::max<int64_t>(1, p.procs / l.tensor_parallel), kTpBroadcasterBytes});
      }
      if (l.mm_cache_shm) p.terms.push_back({"multimodal processor cache", engines, l.mm_cache_bytes});
      // The KV offload region is a file in /dev/shm on CUDA and XPU, a private tensor on ROCm
      // (vllm/v1/kv_offload/cpu/spec.py, _uses_shared_region).
      if (l.kv_offload_bytes > 0 && !l.rocm) {
        p.terms.push_back({"CPU KV-cache offload", engines, l.kv_offload_bytes});
      }
      if (l.ray_backend || l.ray_started) AddRayStore(l, memory_limit, p);
      break;
    }
    case Server::kSglang: {
      const int64_t world = per_engine * l.data_parallel;
      p.procs = LocalProcs(world, l.nnodes, gpus, p.multi_node);
      if (l.tensor_parallel > 1 && l.mq_broadcaster) {
        // Every group of more than one rank gets a broadcaster (python/sglang/srt/distributed/
        // parallel_state.py, initialize_model_parallel): the TP group; inside it, when they split
        // it, the attention-TP groups (TP / attention DP / attention CP ranks each), the
        // attention-CP groups and the decode-CP groups.
        const int64_t tp = l.tensor_parallel, groups = std::max<int64_t>(1, p.procs / tp);
        const int64_t attn_tp = std::max<int64_t>(1, tp / std::max<int64_t>(1, l.attention_dp * l.attention_cp));
        p.terms.push_back({"tensor-parallel broadcaster", groups, kTpBroadcasterBytes});
        if (attn_tp > 1 && attn_tp < tp) {
          p.terms.push_back({"attention tensor-parallel broadcaster", groups * (tp / attn_tp), kTpBroadcasterBytes});
        }
        if (l.attention_cp > 1 && l.attention_cp < tp) {
          p.terms.push_back(
              {"attention context-parallel broadcaster", groups * (tp / l.attention_cp), kTpBroadcasterBytes});
        }
        if (l.decode_cp > 1) {
          p.terms.push_back({"decode context-parallel broadcaster", groups * std::max<int64_t>(1, tp / l.decode_cp),
                             kTpBroadcasterBytes});
        }
      }
      if (l.ray_started) AddRayStore(l, memory_limit, p);
      break;
    }
    case Server::kTgi:
      p.procs = LocalProcs(l.world_size.value_or(std::max<int64_t>(gpus, 1)), 1, gpus, p.multi_node);
      break;
    case Server::kTriton:
      p.procs = LocalProcs(l.world_size.value_or(per_engine > 1 ? per_engine : std::max<int64_t>(gpus, 1)), 1, gpus,
                           p.multi_node);
      break;
    case Server::kRay:
      p.procs = std::max<int64_t>(gpus, 1);
      AddRayStore(l, memory_limit, p);
      break;
    case Server::kNone: break;
  }
  for (const auto& t : p.terms) {
    int64_t bytes = 0, sum = 0;
    if (__builtin_mul_overflow(t.count, t.each, &bytes) || __builtin_add_overflow(p.bytes, bytes, &sum)) {
      return MakeError(Code::kInvalidInput, "the " + t.what + " term exceeds 2^63-1 bytes");
    }
    p.bytes = sum;
  }
  return p;
}

std::string ServerTermsText(const ServerPlan& plan) {
  std::string out;
  for (const auto& t : plan.terms) {
    if (!out.empty()) out += " + ";
    out += t.count == 1 ? HumanBytes(t.each) + " " + t.what
                        : std::to_string(t.count) + " × " + HumanBytes(t.each) + " " + t.what + "s";
  }
  return out;
}

}  // namespace shmguard
