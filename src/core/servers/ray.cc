// Ray's row: `ray start` (a KubeRay pod's too, launch_facts.cc) and its object store, which
// lives in /dev/shm when it fits (docs/sources.md §10).
#include <algorithm>

#include "core/servers/internal/server_rows.h"

namespace shmguard::servers {
namespace {

Result<ServerPlan> PlanRay(const ServerLaunch& l, int64_t gpus, std::optional<int64_t> memory_limit) {
  PlanBuilder b;
  b.plan.procs = std::max<int64_t>(gpus, 1);
  AddRayStore(l, memory_limit, b);
  return b.Finish();
}

// ray start's --object-store-memory is a click int (python/ray/scripts/scripts.py).
constexpr FlagRow kFlags[] = {
    {{"--object-store-memory"},
     FlagValue::kBytes,
     [](ServerLaunch& l, const FlagRead& r) { l.object_store_bytes = r.count; }},
};

constexpr LauncherRow kLaunchers[] = {{"ray", "start"}};

}  // namespace

const ServerRow kRayRow = {Server::kRay, "ray",   "Ray",  kLaunchers, {}, kFlags, {}, NumberParser::kPythonInt,
                           nullptr,      nullptr, PlanRay};

}  // namespace shmguard::servers
