// ReadPod: what one pod template's evaluation reads of it, read once — the DataLoader
// annotations, the facts (pod_facts.cc), the server's plan, what it has at /dev/shm; and the
// counts a server's plan settles.
#include <algorithm>

#include "core/facts/pod_facts.h"
#include "core/facts/shm_mount.h"
#include "core/plan/shm_plan.h"
#include "core/servers/server_plan.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

bool Has(const Annotations& a, const char* key) {
  auto it = a.find(key);
  return it != a.end() && it->second;
}

// The DataLoader annotations of a sized pod into `in`: workers, prefetch factor (the policy's
// when not annotated) and the bytes of one batch.
Result<bool> ReadDataLoader(const Annotations& a, const Policy& policy, ShmInputs& in) {
  auto workers = ReadCountAnnotation(a, kNumWorkersAnnotation, 0, kMaxWorkers);
  if (!workers) return workers.error();
  if (!*workers) {
    return MakeError(Code::kInvalidInput,
                     "is required with shmguard.io/batch-bytes (DataLoader num_workers per process)",
                     Location::Annotation(kNumWorkersAnnotation));
  }
  in.workers = **workers;
  auto prefetch = ReadCountAnnotation(a, kPrefetchFactorAnnotation, 1, kMaxPrefetchFactor);
  if (!prefetch) return prefetch.error();
  in.prefetch_factor = prefetch->value_or(policy.sizing.prefetch_factor);
  auto it = a.find(kBatchBytesAnnotation);
  const Location where = Location::Annotation(kBatchBytesAnnotation);
  if (it == a.end() || !it->second) {
    if (in.workers == 0) return true;  // no workers: batches never touch /dev/shm
    return MakeError(Code::kInvalidInput,
                     "is required when num-workers > 0: the bytes of one collated batch, e.g. 48Mi", where);
  }
  if (!it->second.IsString()) {
    return MakeError(Code::kInvalidInput, "annotation values must be strings: quote it (\"" + it->second.Dump() + "\")",
                     where);
  }
  auto bytes = ParseBytes(it->second.String(), kBatchBytesAnnotation);
  if (!bytes) return MakeError(bytes.error().code, bytes.error().message, where);
  in.batch_bytes = *bytes;
  return true;
}

// An unannotated pod's server, planned: its processes and whether its ranks span pods replace
// what the GPU count said (an annotation, env or torchrun flag still wins).
// Several servers in one pod (each in its container, on that container's GPUs) share its
// /dev/shm: their terms, processes and bytes add up.
void PlanServerOf(PodReading& r) {
  PodFacts& f = r.facts;
  const ServerLaunch& l = *f.server;
  const bool several = !f.more_servers.empty();
  auto gpus_of = [&](const ServerLaunch& s) { return several && s.container_gpus > 0 ? s.container_gpus : f.gpus; };
  auto plan = PlanServer(l, gpus_of(l), f.memory_limit_bytes);
  if (!plan) {
    r.facts_error = MakeError(plan.error().code, plan.error().message, Location::Pointer(l.pointer));
    return;
  }
  for (const ServerLaunch& other : f.more_servers) {
    auto more = PlanServer(other, gpus_of(other), f.memory_limit_bytes);
    if (!more) {
      r.facts_error = MakeError(more.error().code, more.error().message, Location::Pointer(other.pointer));
      return;
    }
    if (__builtin_add_overflow(plan->bytes, more->bytes, &plan->bytes)) {
      r.facts_error = MakeError(Code::kInvalidInput, "its servers' /dev/shm segments sum past 2^63-1 bytes",
                                Location::Pointer(other.pointer));
      return;
    }
    plan->procs += more->procs;
    plan->multi_node = plan->multi_node || more->multi_node;
    plan->terms.insert(plan->terms.end(), more->terms.begin(), more->terms.end());
    if (plan->unbounded.empty()) plan->unbounded = more->unbounded;
    if (plan->unchecked.empty()) plan->unchecked = more->unchecked;
  }
  TakeServerCounts(f, l, *plan);
  if (several && f.procs_source.rfind(std::string(ServerTitle(l.server)), 0) == 0) {
    f.procs_source += " and " + std::to_string(f.more_servers.size()) + " more in the pod's other containers";
  }
  r.server = std::move(*plan);
}

}  // namespace

void TakeServerCounts(PodFacts& f, const ServerLaunch& l, const ServerPlan& plan) {
  if (!f.procs_stated) {
    const std::string flags = ServerFlagsText(l);
    f.procs = std::min(plan.procs, kMaxProcs);
    f.procs_source =
        std::string(ServerTitle(l.server)) + " (" + l.launched_by + (flags.empty() ? "" : ": " + flags) + ")";
    f.procs_stated = true;
    f.procs_pointer = l.pointer;
  }
  if (plan.multi_node && f.nodes == 1) {
    f.nodes = std::max<int64_t>(l.nnodes, 2);
    f.nodes_source = std::string(ServerTitle(l.server)) + "'s ranks span pods";
  }
}

namespace {

// PodReading::current_bytes of a mount that was read.
std::optional<int64_t> CurrentShmBytes(const ShmMount& mount, const PodFacts& facts) {
  switch (mount.kind) {
    case ShmMountKind::kNone:
      if (facts.host_ipc) return std::nullopt;
      return kContainerDefaultShmBytes;
    case ShmMountKind::kMemoryEmptyDir:
      if (mount.size_limit) return mount.size_limit;
      return facts.memory_limit_bytes;
    case ShmMountKind::kOther: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

PodReading ReadPod(const PodTemplate& t, const Policy& policy) {
  PodReading r;
  r.current = std::string(t.default_shm);
  auto facts = ReadPodFacts(t, policy);
  ShmInputs dataloader;
  r.sized = Has(t.annotations, kNumWorkersAnnotation) || Has(t.annotations, kBatchBytesAnnotation);
  if (r.sized) {
    if (auto read = ReadDataLoader(t.annotations, policy, dataloader); !read) r.sizing_error = read.error();
  }
  if (!facts) {
    r.facts_error = facts.error();
    r.mount_error = facts.error();
    r.current_bytes.reset();
    return r;
  }
  r.facts = std::move(*facts);
  if (!r.sized && r.facts.server) PlanServerOf(r);
  r.inputs = PodShmInputs(r.facts);
  if (r.server) r.inputs.server_bytes = r.server->bytes;
  r.inputs.workers = dataloader.workers;
  r.inputs.prefetch_factor = dataloader.prefetch_factor;
  r.inputs.batch_bytes = dataloader.batch_bytes;
  auto mount = ReadShm(t, r.facts);
  if (!mount) {
    r.mount_error = mount.error();
    r.current_bytes.reset();
    return r;
  }
  r.mount = std::move(*mount);
  r.current = DescribeShm(r.mount, t, r.facts);
  r.current_bytes = CurrentShmBytes(r.mount, r.facts);
  return r;
}

ShmInputs PodShmInputs(const PodFacts& facts) {
  ShmInputs in;
  in.procs = facts.procs;
  in.nodes = facts.nodes;
  in.nccl_shm = !facts.nccl_shm_disabled;
  return in;
}

}  // namespace shmguard
