// LeakFinder on real files: a volume directory of its own, a /proc of its own (the pod's
// processes as directories whose fd entries link to the files they hold and whose maps name the
// files they map), and this process's own /proc entry; then ShmAgent finding, reporting and
// deleting a restarted pod's leaked segments.
#include "agent/leak_finder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "agent/fake_proc.h"
#include "agent/shm_agent.h"
#include "test_util.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace test_proc;

TEST_CASE("LeakFinder finds a pod's processes, what they hold, and the files none holds", "[leak_finder]") {
  test::TempDir dir;
  const std::string proc = dir.File("proc"), volume = dir.File("volume"), outside = dir.File("outside");
  fs::create_directories(volume + "/nccl");
  Write(volume + "/open-by-server", 8192);
  Write(volume + "/mapped-by-server", 4096);
  Write(volume + "/left-by-crash", 64 << 10);
  Write(volume + "/nccl/ring-0", 4096);
  Write(outside, 4096);
  fs::create_symlink(outside, volume + "/link-out");
  const std::string pod_cgroup = std::string("4:pids:/kubepods/burstable/pod") + kUid;
  FakeProcess(proc, 100, pod_cgroup + "/sandbox\n", {}, {});
  FakeProcess(proc, 200, pod_cgroup + "/server\n", {volume + "/open-by-server"}, {volume + "/mapped-by-server"});
  FakeProcess(proc, 300, "4:pids:/kubepods/burstable/pod11111111-0000-4b5e-9c7d-112233445566/x\n",
              {volume + "/left-by-crash"}, {});  // another pod's process holds nothing of this pod's
  fs::create_directories(proc + "/self-not-a-pid");

  LeakFinder finder(LeakFinderOptions{.proc_dir = proc});
  const std::string other = "11111111-0000-4b5e-9c7d-112233445566";
  const auto by_pod = finder.ProcessesOf({kUid, other, "no-such-pod"});
  CHECK(by_pod.at(other).pids == std::vector<int>{300});
  CHECK(by_pod.at("no-such-pod").pids.empty());
  const PodProcesses& procs = by_pod.at(kUid);
  CHECK(procs.pids.size() == 2);
  CHECK(procs.containers == std::set<std::string>{"sandbox", "server"});
  std::string unreadable;
  const std::set<FileId> held = finder.HeldBy(procs.pids, unreadable);
  CHECK(unreadable.empty());
  CHECK(held.count(IdOf(volume + "/open-by-server")));
  CHECK(held.count(IdOf(volume + "/mapped-by-server")));
  CHECK_FALSE(held.count(IdOf(volume + "/left-by-crash")));

  const VolumeListing listing = finder.List(volume);
  CHECK(listing.error.empty());
  CHECK(listing.entries.size() == 6);  // 4 files, a directory, a symlink; never what it points at
  const LeakedSegments leaked = FindLeaked(listing.entries, held);
  std::set<std::string> paths;
  for (const auto& f : leaked.files) paths.insert(f.path);
  CHECK(paths == std::set<std::string>{"left-by-crash", "nccl/ring-0"});
  CHECK(leaked.bytes >= (64 << 10) + 4096);

  // Deleted: the leaked files only. A held file, the symlink and its target stay.
  std::string error;
  CHECK(finder.Reclaim(volume, leaked, held, error) == leaked.bytes);
  CHECK(error.empty());
  CHECK_FALSE(fs::exists(volume + "/left-by-crash"));
  CHECK_FALSE(fs::exists(volume + "/nccl/ring-0"));
  CHECK(fs::exists(volume + "/nccl"));
  CHECK(fs::exists(volume + "/open-by-server"));
  CHECK(fs::is_symlink(volume + "/link-out"));
  CHECK(fs::exists(outside));
}

TEST_CASE("LeakFinder::Reclaim deletes no file that changed since the scan, nor follows a symlink", "[leak_finder]") {
  test::TempDir dir;
  const std::string volume = dir.File("volume"), outside = dir.File("outside");
  fs::create_directories(volume);
  fs::create_directories(outside);
  Write(volume + "/seg", 4096);
  Write(outside + "/precious", 4096);
  LeakFinder finder(LeakFinderOptions{.proc_dir = dir.File("proc")});
  LeakedSegments leaked = FindLeaked(finder.List(volume).entries, {});
  REQUIRE(leaked.files.size() == 1);
  // The file was replaced by another of the same name (made before the old one went, so that it
  // cannot reuse its inode): not the one scanned.
  Write(volume + "/seg.new", 4096);
  fs::rename(volume + "/seg.new", volume + "/seg");
  std::string error;
  CHECK(finder.Reclaim(volume, leaked, {}, error) == 0);
  CHECK(fs::exists(volume + "/seg"));
  // A directory of the scan moved out of the volume (its files keep their inodes) and a symlink
  // left in its place: followed, it would reach the very file scanned, outside the volume, and
  // the inode check would pass. Not followed (O_NOFOLLOW): kept.
  fs::create_directories(volume + "/d");
  Write(volume + "/d/precious", 4096);
  leaked = FindLeaked(finder.List(volume).entries, {{IdOf(volume + "/seg")}});
  REQUIRE(leaked.files.size() == 1);
  fs::rename(volume + "/d", outside + "/moved");
  fs::create_directory_symlink(outside + "/moved", volume + "/d");
  CHECK(finder.Reclaim(volume, leaked, {}, error) == 0);
  CHECK(fs::exists(outside + "/moved/precious"));
  // Held now: kept.
  CHECK(finder.Reclaim(volume, FindLeaked(finder.List(volume).entries, {}), {IdOf(volume + "/seg")}, error) == 0);
  CHECK(fs::exists(volume + "/seg"));
}

TEST_CASE("LeakFinder bounds a listing and reads what this process maps and holds from the real /proc",
          "[leak_finder]") {
  test::TempDir dir;
  const std::string volume = dir.File("volume");
  fs::create_directories(volume + "/a/b/c/d/e/f");
  for (int i = 0; i < 20; ++i) Write(volume + "/f" + std::to_string(i), 0);
  LeakFinder bounded(LeakFinderOptions{.max_entries = 10, .max_depth = 2});
  const VolumeListing l = bounded.List(volume);
  CHECK(l.entries.size() == 10);
  CHECK(l.error == "more than 10 entries: the rest not read");
  LeakFinder shallow(LeakFinderOptions{.max_depth = 2});
  std::set<std::string> dirs;
  for (const auto& e : shallow.List(volume).entries) dirs.insert(e.path);
  CHECK(dirs.count("a/b/c"));  // depth 2 listed, not entered
  CHECK_FALSE(dirs.count("a/b/c/d"));
  CHECK(shallow.List(dir.File("missing")).error.find("No such file") != std::string::npos);

  // This process: a file it holds open and one it maps (the fd closed after mmap, as
  // multiprocessing's SharedMemory and torch do).
  Write(volume + "/open", 4096);
  Write(volume + "/mapped", 4096);
  std::ifstream held_open(volume + "/open");
  const int fd = ::open((volume + "/mapped").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(map != MAP_FAILED);
  LeakFinder real(LeakFinderOptions{});
  std::string unreadable;
  const std::set<FileId> held = real.HeldBy({static_cast<int>(::getpid())}, unreadable);
  CHECK(unreadable.empty());
  CHECK(held.count(IdOf(volume + "/open")));
  CHECK(held.count(IdOf(volume + "/mapped")));
  CHECK_FALSE(held.count(IdOf(volume + "/f0")));
  ::munmap(map, 4096);
}

TEST_CASE(
    "ShmAgent reports a restarted pod's leaked segments, leaves them out of its peak, and deletes them when "
    "allowed and idle",
    "[leak_finder][shm_agent]") {
  test::TempDir dir;
  const std::string kubelet = dir.File("kubelet"), proc = dir.File("proc");
  const std::string volume = kubelet + "/pods/" + kUid + "/volumes/kubernetes.io~empty-dir/dshm";
  fs::create_directories(volume);
  Write(volume + "/psm_crashed", 3 << 20);
  Write(volume + "/psm_live", 1 << 20);
  FakeProcess(proc, 100, std::string("4:pids:/kubepods/pod") + kUid + "/sandbox\n", {}, {});
  FakeProcess(proc, 200, std::string("4:pids:/kubepods/pod") + kUid + "/server2\n", {volume + "/psm_live"}, {});
  AgentOptions o;
  o.kubelet_dir = kubelet;
  o.proc_dir = proc;
  o.leaked_segments = LeakMode::kExact;  // the processes' view: psm_live is held
  // statfs of the volume as a tmpfs of 8 MiB holding both files.
  uint64_t used = 4 << 20;
  ShmAgent agent(o, nullptr, [&](const std::string& path) -> std::optional<FsUse> {
    if (path != volume) return std::nullopt;
    return FsUse{used, 8 << 20, true};
  });

  agent.SetPods(json::array({RestartedPod(true, true)}));
  agent.SampleOnce();  // the scan, after the restart, then the sample
  auto uses = agent.Uses();
  REQUIRE(uses.size() == 1);
  CHECK(uses[0].leaked == 3 << 20);
  CHECK(uses[0].leaked_files == 1);
  CHECK(uses[0].used == 4 << 20);
  CHECK(uses[0].peak == 1 << 20);  // what the live server uses, not what the crashed one left
  const std::string metrics = agent.RenderMetrics();
  CHECK_THAT(metrics,
             Catch::Contains("shmguard_pod_shm_leaked_bytes{namespace=\"serving\",pod=\"sglang-0\",volume=\"dshm\","
                             "workload=\"Pod/sglang-0\"} 3145728\n"));
  CHECK(fs::exists(volume + "/psm_crashed"));  // a container runs: never deleted

  // Crashed again and waiting in back-off: the server's process is gone, the sandbox stays.
  fs::remove_all(proc + "/200");
  agent.UpdatePod("MODIFIED", RestartedPod(false, false));
  agent.SampleOnce();
  CHECK(fs::exists(volume + "/psm_crashed"));  // not allowed: kept, and both are now leaked
  CHECK(agent.Uses().at(0).leaked == 4 << 20);

  agent.UpdatePod("MODIFIED", RestartedPod(false, true));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the next scan of an idle pod
  agent.SampleOnce();
  CHECK_FALSE(fs::exists(volume + "/psm_crashed"));
  CHECK_FALSE(fs::exists(volume + "/psm_live"));
  CHECK(agent.Uses().at(0).leaked == 0);
  CHECK_THAT(agent.RenderMetrics(), Catch::Contains("shmguard_agent_leaked_reclaimed_bytes_total 4194304\n"));
}

// The status mode reports what it finds left behind, but keeps it in the peak: it cannot tell a
// segment the running server reopened from one a crash left, and a learned size must not fall
// below what the workload uses.
TEST_CASE("ShmAgent's status mode reports left-behind segments and keeps them in the peak",
          "[leak_finder][shm_agent]") {
  test::TempDir dir;
  const std::string kubelet = dir.File("kubelet");
  const std::string volume = kubelet + "/pods/" + kUid + "/volumes/kubernetes.io~empty-dir/dshm";
  fs::create_directories(volume);
  Write(volume + "/psm_crashed", 3 << 20);
  AgentOptions o;
  o.kubelet_dir = kubelet;
  o.proc_dir = dir.File("no-proc");  // never read
  o.leaked_segments = LeakMode::kStatus;
  ShmAgent agent(o, nullptr, [&](const std::string& path) -> std::optional<FsUse> {
    if (path != volume) return std::nullopt;
    return FsUse{3 << 20, 8 << 20, true};
  });
  json pod = RestartedPod(true, false);
  pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] = "2999-01-01T00:00:00Z";  // after the file
  agent.SetPods(json::array({pod}));
  agent.SampleOnce();
  const auto uses = agent.Uses();
  REQUIRE(uses.size() == 1);
  CHECK(uses[0].leaked == 3 << 20);
  CHECK(uses[0].peak == 3 << 20);
}

}  // namespace
}  // namespace shmguard::agent
