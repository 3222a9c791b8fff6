// ConnectionsFor, CgroupMemoryLimit: the webhook's connections from its memory limit.
#include "server/connection_budget.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace shmguard::server {
namespace {

std::optional<int64_t> ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    const long long v = std::stoll(text);
    // cgroup v1 writes "no limit" as a huge page-rounded number.
    if (v <= 0 || v >= (int64_t{1} << 62)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

// This process's cgroup path in the hierarchy `controller` ("" for v2's unified one).
std::string CgroupPath(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "0::/kubepods/..." (v2) or "4:memory:/kubepods/..." (v1)
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (controller.empty() ? controllers.empty()
                           : ("," + controllers + ",").find("," + controller + ",") != std::string::npos) {
      return line.substr(b + 1);
    }
  }
  return "";
}

}  // namespace

size_t ConnectionsFor(std::optional<int64_t> memory_limit, int threads, size_t max_body_bytes) {
  if (!memory_limit) return kMaxConnectionsUnlimited;
  const int64_t in_flight = int64_t{std::max(threads, 1)} * 2 * static_cast<int64_t>(max_body_bytes);
  const int64_t room = *memory_limit - kBaseBytes - in_flight;
  const int64_t n = room > 0 ? room / kIdleConnectionBytes : 0;
  return static_cast<size_t>(std::clamp<int64_t>(n, 64, static_cast<int64_t>(kMaxConnectionsUnlimited)));
}

std::optional<int64_t> CgroupMemoryLimit() {
  // Inside a container the cgroup is mounted at its own root; outside, at its path.
  for (const std::string& dir : {std::string("/sys/fs/cgroup"), "/sys/fs/cgroup" + CgroupPath("")}) {
    if (auto v = ReadLimit(dir + "/memory.max")) return v;
  }
  for (const std::string& dir :
       {std::string("/sys/fs/cgroup/memory"), "/sys/fs/cgroup/memory" + CgroupPath("memory")}) {
    if (auto v = ReadLimit(dir + "/memory.limit_in_bytes")) return v;
  }
  return std::nullopt;
}

}  // namespace shmguard::server
