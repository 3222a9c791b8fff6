// Triton's row (tritonserver, launch_triton_server.py, TensorRT-LLM's trtllm-serve): its ranks
// from mpirun's -n, --world-size, else --tp-size × --pp-size, else the GPUs. mpirun alone
// launches anything (NCCL's own tests too), so it counts only when it runs one of these, and its
// -n is read from the start of the command.
#include <algorithm>

#include "core/servers/internal/server_rows.h"
#include "core/values/human_units.h"

namespace shmguard::servers {
namespace {

// Triton's Python backend keeps a shared-memory region per model instance in /dev/shm, 1 MiB to
// start and growing by 1 MiB (triton-inference-server/python_backend src/python_be.cc:2270-2271,
// shm-default-byte-size and shm-growth-byte-size): how many instances there are is in the
// model repository, which the pod spec does not hold.
// --backend-config=python,shm-default-byte-size=N starts every region at N bytes, at least 1 MiB
// (python_be.cc:2302-2311; each model instance's stub gets it, stub_launcher.cc:62-63). One
// instance's region is counted: the pod spec holds no model repository to count them by.
constexpr int64_t kDefaultRegionBytes = int64_t{1} << 20;

Result<ServerPlan> PlanTriton(const ServerLaunch& l, int64_t gpus, std::optional<int64_t>) {
  ServerLaunch launch = l;
  FillUnread(gpus, {&launch.tensor_parallel, &launch.pipeline_parallel});
  PlanBuilder b;
  const int64_t per_engine = launch.tensor_parallel * launch.pipeline_parallel;
  const int64_t world = launch.world_size.value_or(per_engine > 1 ? per_engine : std::max<int64_t>(gpus, 1));
  b.plan.procs = LocalRanks(world, 1, gpus, b.plan.multi_node);
  const int64_t region = launch.python_shm_default_bytes;
  if (region > kDefaultRegionBytes) b.Add(ServerSegment::kPythonBackendRegion, 1, region);
  b.plan.unbounded = "Triton's Python backend, where a model uses it: a region per model instance of " +
                     HumanBytes(region) + ", growing with the tensors it passes (the model repository says " +
                     "how many instances" + (region > kDefaultRegionBytes ? "; one is counted" : "") + ")";
  return b.Finish();
}

// std::stol of a backend setting (python_be.cc:2306): leading blanks, a sign, digits, the rest
// ignored; nullopt where it throws.
std::optional<int64_t> Stol(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  const size_t start = i;
  int64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v)) return std::nullopt;
  }
  if (i == start) return std::nullopt;
  return negative ? -v : v;
}

// --backend-config=BACKEND,SETTING=VALUE (tritonserver's, repeated): the Python backend's
// shm-default-byte-size, and the same setting of a Python-based backend, which runs the same
// backend code under its own name.
void SetBackendConfig(ServerLaunch& l, const FlagRead& r) {
  const std::string_view v = r.word;
  const size_t comma = v.find(',');
  if (comma == std::string_view::npos) return;
  const std::string_view setting = v.substr(comma + 1);
  const size_t eq = setting.find('=');
  if (eq == std::string_view::npos || setting.substr(0, eq) != "shm-default-byte-size") return;
  auto n = Stol(setting.substr(eq + 1));
  // Triton refuses a value below 1 MiB or unreadable at start; the default stays here.
  if (n && *n >= kDefaultRegionBytes) l.python_shm_default_bytes = std::max(l.python_shm_default_bytes, *n);
}

constexpr FlagRow kFlags[] = {
    {{"-n", "-np", "--world-size"}, FlagValue::kCount, SetOptionalCount<&ServerLaunch::world_size>},
    {{"--tp-size", "--tp"}, FlagValue::kCount, SetCount<&ServerLaunch::tensor_parallel>},
    {{"--pp-size", "--pp"}, FlagValue::kCount, SetCount<&ServerLaunch::pipeline_parallel>},
    {{"--backend-config"}, FlagValue::kWord, SetBackendConfig, {}, 1, true},
};

constexpr LauncherRow kLaunchers[] = {
    {"tritonserver", "", true},
    {"launch_triton_server.py", "", true},
    {"trtllm-serve", "", true},
};

}  // namespace

const ServerRow kTritonRow = {Server::kTriton,          "triton", "Triton", kLaunchers, {}, kFlags, {},
                              NumberParser::kPythonInt, nullptr,  nullptr,  PlanTriton};

}  // namespace shmguard::servers
