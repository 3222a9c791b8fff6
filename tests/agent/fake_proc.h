// A /proc of a test's own for the agent's leak tests: a pod's processes as directories whose
// cgroup names the pod, whose fd entries link to the files they hold and whose maps name the
// files they map; and files of a given size.
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/node/leaked_segments.h"

namespace shmguard::agent::test_proc {

// The pod the leak tests scan.
inline constexpr char kUid[] = "8a1f2c3d-0000-4b5e-9c7d-112233445566";

inline FileId IdOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

inline void Write(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::string block(4096, 'x');
  for (size_t n = 0; n < bytes; n += block.size()) out.write(block.data(), static_cast<std::streamsize>(block.size()));
}

// A process of the fake /proc: its cgroup, the files it holds open (fd links) and maps.
inline void FakeProcess(const std::string& proc, int pid, const std::string& cgroup,
                        const std::vector<std::string>& open, const std::vector<std::string>& mapped) {
  const std::string base = proc + "/" + std::to_string(pid);
  std::filesystem::create_directories(base + "/fd");
  std::ofstream(base + "/cgroup") << cgroup;
  for (size_t i = 0; i < open.size(); ++i)
    std::filesystem::create_symlink(open[i], base + "/fd/" + std::to_string(i + 3));
  std::ofstream maps(base + "/maps");
  for (const auto& path : mapped) {
    const FileId id = IdOf(path);
    char dev[32];
    std::snprintf(dev, sizeof dev, "%02x:%02x", major(id.dev), minor(id.dev));
    maps << "7f0000000000-7f0000100000 rw-s 00000000 " << dev << " " << id.ino << " " << path << "\n";
  }
}

// A pod whose server crashed and restarted, as the informer tells of it.
inline nlohmann::json RestartedPod(bool running, bool reclaim) {
  nlohmann::json pod =
      nlohmann::json::parse(R"({"metadata":{"uid":"8a1f2c3d-0000-4b5e-9c7d-112233445566","namespace":"serving",
      "name":"sglang-0","annotations":{}},
    "spec":{"volumes":[{"name":"dshm","emptyDir":{"medium":"Memory"}}],
            "containers":[{"name":"server","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]},
    "status":{"containerStatuses":[{"name":"server","restartCount":1,"containerID":"containerd://server2",
      "state":{}}]}})");
  pod["status"]["containerStatuses"][0]["state"] = running
                                                       ? nlohmann::json{{"running", nlohmann::json::object()}}
                                                       : nlohmann::json{{"waiting", {{"reason", "CrashLoopBackOff"}}}};
  if (reclaim) pod["metadata"]["annotations"]["shmguard.io/reclaim-leaked"] = "true";
  return pod;
}

}  // namespace shmguard::agent::test_proc
