// Triton's row (tritonserver, launch_triton_server.py, TensorRT-LLM's trtllm-serve): its ranks
// from mpirun's -n, --world-size, else --tp-size × --pp-size, else the GPUs. mpirun alone
// launches anything (NCCL's own tests too), so it counts only when it runs one of these, and its
// -n is read from the start of the command.
#include <algorithm>

#include "server_rows.h"

namespace shmguard::servers {
namespace {

// Triton's Python backend keeps a shared-memory region per model instance in /dev/shm, 1 MiB to
// start and growing by 1 MiB (triton-inference-server/python_backend src/python_be.cc:2270-2271,
// shm-default-byte-size and shm-growth-byte-size): how many instances there are is in the
// model repository, which the pod spec does not hold.
constexpr const char* kPythonBackend =
    "Triton's Python backend, where a model uses it: a region per model instance of 1 MiB, growing by 1 MiB "
    "with the tensors it passes (the model repository says how many instances)";

Result<ServerPlan> PlanTriton(const ServerLaunch& l, int64_t gpus, std::optional<int64_t>) {
  ServerLaunch launch = l;
  FillUnread(gpus, {&launch.tensor_parallel, &launch.pipeline_parallel});
  PlanBuilder b;
  const int64_t per_engine = launch.tensor_parallel * launch.pipeline_parallel;
  const int64_t world = launch.world_size.value_or(per_engine > 1 ? per_engine : std::max<int64_t>(gpus, 1));
  b.plan.procs = LocalRanks(world, 1, gpus, b.plan.multi_node);
  b.plan.unbounded = kPythonBackend;
  return b.Finish();
}

constexpr FlagRow kFlags[] = {
    {{"-n", "-np", "--world-size"}, FlagValue::kCount, SetOptionalCount<&ServerLaunch::world_size>},
    {{"--tp-size", "--tp"}, FlagValue::kCount, SetCount<&ServerLaunch::tensor_parallel>},
    {{"--pp-size", "--pp"}, FlagValue::kCount, SetCount<&ServerLaunch::pipeline_parallel>},
};

constexpr LauncherRow kLaunchers[] = {
    {"tritonserver", "", true},
    {"launch_triton_server.py", "", true},
    {"trtllm-serve", "", true},
};

}  // namespace

const ServerRow kTritonRow = {Server::kTriton,          "triton", "Triton",  kLaunchers, {}, kFlags, {},
                              NumberParser::kPythonInt, nullptr,  PlanTriton};

}  // namespace shmguard::servers
