// RunPlan: the flags as the planner's inputs, the plan and its memory-limit check, printed as
// text or JSON with how to set it in a pod, with docker run and in Compose.
#include "cli/commands/plan_command.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/outputs/audit_output.h"
#include "core/facts/pod_facts.h"
#include "core/patch/ipc_lock.h"
#include "core/plan/shm_plan.h"
#include "core/servers/server_plan.h"
#include "core/sizing/memory_limit.h"
#include "core/values/docker_bytes.h"
#include "core/values/quantity.h"
#include "io/words/finding_text.h"

namespace shmguard::cli {

using nlohmann::json;

namespace {

// The server's flags as its row reads them: plan's shorthands (--tp, --pp, --dp; vLLM's
// --mm-processor-cache-shm) spelled as the server's parser spells them.
std::vector<std::string> ServerArgs(Server server, const std::vector<std::string>& args) {
  const std::vector<std::string_view> known = ServerFlagNames(server);
  auto knows = [&](std::string_view flag) { return std::find(known.begin(), known.end(), flag) != known.end(); };
  const std::pair<std::string_view, std::string_view> shorthands[] = {
      {"--tp", "--tensor-parallel-size"}, {"--pp", "--pipeline-parallel-size"}, {"--dp", "--data-parallel-size"}};
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    const std::string_view flag = std::string_view(arg).substr(0, eq);
    std::string word = arg;
    for (const auto& [from, to] : shorthands) {
      if (flag == from && !knows(from) && knows(to)) word = std::string(to) + arg.substr(flag.size());
    }
    if (flag == "--mm-processor-cache-shm" && server == Server::kVllm) {
      out.push_back("--mm-processor-cache-type=shm");
      continue;
    }
    out.push_back(std::move(word));
  }
  // TGI's shards and Triton's ranks: a TP size is their world when they are not given one.
  if ((server == Server::kTgi || server == Server::kTriton) && !knows("--tensor-parallel-size")) {
    for (size_t i = 0; i < out.size(); ++i) {
      for (std::string_view from : {"--tensor-parallel-size", "--tp"}) {
        if (out[i] == from) out[i] = server == Server::kTgi ? "--num-shard" : "--world-size";
        if (out[i].starts_with(std::string(from) + "=")) {
          out[i] = (server == Server::kTgi ? "--num-shard" : "--world-size") + out[i].substr(from.size());
        }
      }
    }
  }
  return out;
}

// The ShmInputs and PodFacts the flags state, or the message naming the flag that is wrong.
struct PlanInputs {
  ShmInputs shm;
  PodFacts facts;
  std::optional<ServerPlan> server;
};
Result<PlanInputs> ReadFlags(const PlanOptions& o, const Policy& policy) {
  auto range = [](const char* flag, int64_t v, int64_t min, int64_t max) -> std::optional<Error> {
    if (v >= min && v <= max) return std::nullopt;
    return MakeError(
        Code::kInvalidInput,
        std::to_string(v) + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max),
        Location::Field(flag));
  };
  PlanInputs in;
  if (auto e = range("--num-workers", o.num_workers, 0, kMaxWorkers)) return *e;
  if (auto e = range("--gpus", o.gpus, 0, kMaxProcs)) return *e;
  if (auto e = range("--nodes", o.nodes, 1, kMaxNodes)) return *e;
  if (o.prefetch_factor) {
    if (auto e = range("--prefetch-factor", *o.prefetch_factor, 1, kMaxPrefetchFactor)) return *e;
  }
  if (o.procs) {
    if (auto e = range("--procs", *o.procs, 1, kMaxProcs)) return *e;
  }
  PodFacts& f = in.facts;
  f.gpus = o.gpus;
  f.procs = o.procs ? *o.procs : std::max<int64_t>(o.gpus, 1);
  f.procs_source = o.procs ? "--procs" : o.gpus > 0 ? std::to_string(o.gpus) + " GPUs (--gpus)" : "default";
  f.nodes = o.nodes;
  if (o.memory_limit) {
    auto limit = ParseBytes(*o.memory_limit, "--memory-limit");
    if (!limit) return limit.error();
    if (*limit > 0) f.memory_limit_bytes = *limit;
  }
  f.memory_limit_source = f.memory_limit_bytes ? "--memory-limit" : "no --memory-limit";
  if (!o.server.empty()) {
    auto server = ParseServer(o.server);
    if (!server) {
      return MakeError(Code::kInvalidInput, "\"" + o.server + "\" is not one of vllm, sglang, tgi, triton, ray",
                       Location::Field("--server"));
    }
    auto launch = ReadServerArgs(*server, ServerArgs(*server, o.server_args));
    if (!launch) return launch.error();
    ServerLaunch& l = *launch;
    if (!o.object_store.empty()) {
      auto bytes = ParseBytes(o.object_store, "--object-store-memory");
      if (!bytes) return bytes.error();
      if (*bytes < 1) {
        return MakeError(Code::kInvalidInput, "must be at least 1 byte", Location::Field("--object-store-memory"));
      }
      l.object_store_bytes = *bytes;
      l.ray_started = true;
    }
    auto plan = PlanServer(l, o.gpus, f.memory_limit_bytes);
    if (!plan) return plan.error();
    f.procs_stated = o.procs.has_value();
    TakeServerCounts(f, l, *plan);
    in.server = std::move(*plan);
  }
  in.shm = PodShmInputs(f);
  if (in.server) in.shm.server_bytes = in.server->bytes;
  in.shm.workers = o.num_workers;
  in.shm.prefetch_factor = o.prefetch_factor.value_or(policy.sizing.prefetch_factor);
  if (!o.batch_bytes.empty()) {
    auto bytes = ParseBytes(o.batch_bytes, "--batch-bytes");
    if (!bytes) return bytes.error();
    in.shm.batch_bytes = *bytes;
  } else if (o.num_workers > 0) {
    return MakeError(Code::kInvalidInput,
                     "is required when num-workers > 0: the bytes of one collated batch, e.g. 48Mi",
                     Location::Field("--batch-bytes"));
  }
  return in;
}

// What `plan` answers: the plan and its findings, its arithmetic, and how to set it in a pod,
// with docker run and in Compose.
struct PlanAnswer {
  ShmPlan plan;
  std::optional<int64_t> memory_limit;
  std::vector<Finding> findings;  // shm-plan first
  std::vector<std::string> arithmetic;
  bool denied = false;
  bool lock = false, ulimit = false;  // IPC_LOCK in a pod; an unlimited memlock ulimit for Docker
  std::string docker_size, docker_run;
};

// The same catalogue as the webhook's: the plan, the memory limit, the layout's advice.
std::vector<Finding> PlanFindings(const PlanOptions& o, const ShmPlan& plan, const PlanInputs& in, const Policy& policy,
                                  bool& denied) {
  LimitCheck limit = CheckLimit(plan.required_bytes, in.facts, policy, ShmUse{});
  denied = limit.denial.has_value();
  std::vector<Finding> findings = {ShmPlanFinding(plan, policy.sizing, "dshm", in.facts.procs_source)};
  if (in.server) findings[0].Val("server_terms", ServerTermsText(*in.server));
  for (auto* f : {&limit.denial, &limit.headroom, &limit.missing}) {
    if (*f) findings.push_back(std::move(**f));
  }
  if (o.procs && o.gpus > 0 && *o.procs != o.gpus) {
    findings.push_back(Finding(Check::kProcsGpusMismatch)
                           .Num("procs", *o.procs)
                           .Num("gpus", o.gpus)
                           .Val("procs_source", in.facts.procs_source));
  }
  if (o.gpus == 1 && o.nodes > 1) {
    findings.push_back(Finding(Check::kSingleGpuPods).Num("pods", o.nodes).Val("pods_source", "--nodes"));
  }
  return findings;
}

// The same answer in the three places /dev/shm is set: a pod's volume, docker run, Compose.
// Locked memory by the webhook's rules (ipc_lock.h) for a container whose user is the image's:
// IPC_LOCK in a pod (where it runs as root), an unlimited memlock ulimit for Docker.
PlanAnswer Answer(const PlanOptions& o, const ShmPlan& plan, const PlanInputs& in, const Policy& policy) {
  PlanAnswer a;
  a.plan = plan;
  a.memory_limit = in.facts.memory_limit_bytes;
  a.findings = PlanFindings(o, plan, in, policy, a.denied);
  a.arithmetic = io::ExplainPlan(plan, policy.sizing, in.server ? ServerTermsText(*in.server) : "");
  ContainerFacts container;
  container.gpus = o.gpus;
  container.rdma = o.rdma ? "--rdma" : "";
  a.lock = AddsIpcLock(container, policy.ipc_lock);
  a.ulimit = AddsMemlockUlimit(container, policy.ipc_lock);
  a.docker_size = FormatDockerBytes(plan.required_bytes);
  a.docker_run = "docker run --shm-size=" + a.docker_size + (a.ulimit ? " --ulimit memlock=-1:-1" : "");
  return a;
}

void WritePlanJson(const PlanAnswer& a, std::ostream& out) {
  const ShmPlan& plan = a.plan;
  const json volume = {{"name", kShmVolumeName},
                       {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", FormatBytes(plan.required_bytes)}}}};
  json compose = {{"shm_size", a.docker_size}};
  if (a.ulimit) compose["ulimits"] = {{"memlock", -1}};
  json j = {{"required_bytes", plan.required_bytes},
            {"required", FormatBytes(plan.required_bytes)},
            {"memory_limit_bytes", a.memory_limit ? json(*a.memory_limit) : json()},
            {"memory_limit", a.memory_limit ? json(FormatBytes(*a.memory_limit)) : json()},
            {"left_for_processes_bytes", a.memory_limit ? json(*a.memory_limit - plan.required_bytes) : json()},
            {"verdict", a.denied ? "deny" : "ok"},
            {"findings", json::array()},
            {"terms",
             {{"dataloader_bytes", plan.dataloader_bytes},
              {"nccl_shm_bytes", plan.nccl_shm_bytes},
              {"nccl_proxy_bytes", plan.nccl_proxy_bytes},
              {"server_bytes", plan.server_bytes},
              {"base_bytes", plan.base_bytes},
              {"floor_applied", plan.floor_applied}}},
            {"arithmetic", a.arithmetic},
            {"kubernetes", {{"volume", volume}, {"mountPath", kShmPath}, {"ipc_lock", a.lock}}},
            {"docker_run", a.docker_run},
            {"compose", compose}};
  for (const auto& f : a.findings) j["findings"].push_back(FindingToJson({f}, false));
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void WritePlanText(const PlanAnswer& a, std::ostream& out) {
  const int64_t required = a.plan.required_bytes;
  out << "/dev/shm needs " << FormatBytes(required) << " (" << required << " bytes)\n";
  for (const auto& line : a.arithmetic) out << "  " << line << "\n";
  if (a.memory_limit) {
    out << "memory limit " << FormatBytes(*a.memory_limit) << ": " << (a.denied ? "DENY" : "ok") << "\n";
  }
  for (size_t i = 1; i < a.findings.size(); ++i) {
    out << "  " << SeverityName(a.findings[i].severity) << " [" << a.findings[i].id() << "] "
        << io::FindingText(a.findings[i]) << "\n";
  }
  out << "verdict: " << (a.denied ? "deny" : "ok") << "\n";
  out << "set it:\n"
      << "  Kubernetes: volume " << kShmVolumeName << ": emptyDir {medium: Memory, sizeLimit: " << FormatBytes(required)
      << "} mounted at " << kShmPath
      << (a.lock ? ", capability IPC_LOCK (it takes effect when the container runs as root)" : "") << "\n"
      << "  docker run: " << a.docker_run << " ...\n"
      << "  Compose:    shm_size: " << a.docker_size << "\n";
  if (a.ulimit) out << "              ulimits: {memlock: -1}\n";
}

}  // namespace

ExitCode RunPlan(const PlanOptions& o, const Policy& policy, std::ostream& out, std::ostream& err) {
  if (o.output != "text" && o.output != "json") {
    err << "shmguard plan: -o must be text or json, got \"" << o.output << "\"\n";
    return ExitCode::kUsage;
  }
  auto in = ReadFlags(o, policy);
  auto planned = in ? PlanShm(in->shm, policy.sizing) : Result<ShmPlan>(in.error());
  if (!planned) {
    err << "shmguard plan: " << planned.error().ToString() << "\n";
    return ExitCode::kUsage;
  }
  const PlanAnswer answer = Answer(o, *planned, *in, policy);
  if (o.output == "json") {
    WritePlanJson(answer, out);
  } else {
    WritePlanText(answer, out);
  }
  return answer.denied ? ExitCode::kFindings : ExitCode::kOk;
}

}  // namespace shmguard::cli
