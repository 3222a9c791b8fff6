// RunPlan: synthesise the Pod, Evaluate it, print the plan as text or JSON, with how to set it
// in a pod, with docker run and in Compose.
#include "cli/plan_command.h"

#include <nlohmann/json.hpp>

#include "shmguard/compose.h"
#include "shmguard/evaluation.h"
#include "shmguard/pod_templates.h"
#include "shmguard/quantity.h"

namespace shmguard::cli {

using nlohmann::json;

ExitCode RunPlan(const PlanOptions& o, const Policy& base_policy, std::ostream& out,
                 std::ostream& err) {
  if (o.output != "text" && o.output != "json") {
    err << "shmguard plan: -o must be text or json, got \"" << o.output << "\"\n";
    return ExitCode::kUsage;
  }
  json annotations = {{kNumWorkersAnnotation, o.num_workers}};
  if (o.prefetch_factor) annotations[kPrefetchFactorAnnotation] = *o.prefetch_factor;
  if (o.batch_bytes) annotations[kBatchBytesAnnotation] = *o.batch_bytes;
  if (o.procs) annotations[kProcsPerPodAnnotation] = *o.procs;
  if (o.nodes > 1) annotations[kNodesAnnotation] = std::to_string(o.nodes);
  json limits = json::object();
  if (o.gpus > 0) limits[base_policy.gpu_resources.front()] = std::to_string(o.gpus);
  if (o.memory_limit) limits["memory"] = *o.memory_limit;
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "plan"}, {"annotations", annotations}}},
              {"spec", {{"containers", {{{"name", "trainer"}, {"resources", {{"limits", limits}}}}}}}}};

  Policy policy = base_policy;  // the calculator ignores namespace rules
  policy.namespaces = {NamespaceRule{{"*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kPrivileged}};
  Evaluation ev = Evaluate(pod, policy, "default");
  const PodEvaluation& pe = ev.pods.at(0);
  if (!pe.plan) {  // invalid input: the reason names the annotation -> name the flag instead
    for (std::string r : pe.reasons) {
      for (const auto& [annotation, flag] :
           {std::pair{kNumWorkersAnnotation, "--num-workers"}, {kPrefetchFactorAnnotation, "--prefetch-factor"},
            {kBatchBytesAnnotation, "--batch-bytes"}, {kProcsPerPodAnnotation, "--procs"}}) {
        std::string name = std::string("annotation ") + annotation;
        if (auto at = r.find(name); at != std::string::npos) r.replace(at, name.size(), flag);
      }
      err << "shmguard plan: " << r << "\n";
    }
    return ExitCode::kUsage;
  }
  const ShmPlan& plan = *pe.plan;
  const std::vector<std::string> arithmetic = ExplainPlan(plan, policy.sizing);
  bool denied = pe.verdict == Verdict::kDeny;
  // The same answer in the three places /dev/shm is set: a pod's volume, docker run, Compose.
  // Locked memory goes wherever a pod would get IPC_LOCK (what pin_memory needs).
  const bool lock = policy.ipc_lock == ContainerSelection::kAll ||
                    (policy.ipc_lock == ContainerSelection::kGpuContainers && o.gpus > 0);
  const std::string docker_size = FormatDockerBytes(plan.required_bytes);
  const std::string docker_run = "docker run --shm-size=" + docker_size + (lock ? " --ulimit memlock=-1:-1" : "");
  json volume = {{"name", kShmVolumeName},
                 {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", FormatBytes(plan.required_bytes)}}}};
  json compose = {{"shm_size", docker_size}};
  if (lock) compose["ulimits"] = {{"memlock", -1}};
  if (o.output == "json") {
    json j = {{"required_bytes", plan.required_bytes},
              {"required", FormatBytes(plan.required_bytes)},
              {"memory_limit_bytes", pe.memory_limit_bytes ? json(*pe.memory_limit_bytes) : json()},
              {"memory_limit", pe.memory_limit_bytes ? json(FormatBytes(*pe.memory_limit_bytes)) : json()},
              {"left_for_processes_bytes",
               pe.memory_limit_bytes ? json(*pe.memory_limit_bytes - plan.required_bytes) : json()},
              {"verdict", denied ? "deny" : "ok"},
              {"reasons", pe.reasons},
              {"warnings", pe.warnings},
              {"terms",
               {{"dataloader_bytes", plan.dataloader_bytes},
                {"nccl_shm_bytes", plan.nccl_shm_bytes},
                {"nccl_proxy_bytes", plan.nccl_proxy_bytes},
                {"base_bytes", plan.base_bytes},
                {"floor_applied", plan.floor_applied}}},
              {"arithmetic", arithmetic},
              {"kubernetes", {{"volume", volume}, {"mountPath", kShmPath}, {"ipc_lock", lock}}},
              {"docker_run", docker_run},
              {"compose", compose}};
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    out << "/dev/shm needs " << FormatBytes(plan.required_bytes) << " (" << plan.required_bytes
        << " bytes)\n";
    for (const auto& line : arithmetic) out << "  " << line << "\n";
    if (pe.memory_limit_bytes) {
      out << "memory limit " << FormatBytes(*pe.memory_limit_bytes) << ": "
          << (denied ? "DENY" : "ok") << "\n";
    }
    for (size_t i = 1; i < pe.reasons.size(); ++i) out << "  " << pe.reasons[i] << "\n";
    for (const auto& w : pe.warnings) out << "  warning: " << w << "\n";
    out << "verdict: " << (denied ? "deny" : "ok") << "\n";
    out << "set it:\n"
        << "  Kubernetes: volume " << kShmVolumeName << ": emptyDir {medium: Memory, sizeLimit: "
        << FormatBytes(plan.required_bytes) << "} mounted at " << kShmPath << (lock ? ", capability IPC_LOCK" : "")
        << "\n"
        << "  docker run: " << docker_run << " ...\n"
        << "  Compose:    shm_size: " << docker_size << "\n";
    if (lock) out << "              ulimits: {memlock: -1}\n";
  }
  return denied ? ExitCode::kFindings : ExitCode::kOk;
}

}  // namespace shmguard::cli
