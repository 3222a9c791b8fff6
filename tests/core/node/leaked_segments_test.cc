// Leaked segments, the pure part: the files a process maps, the pod a process belongs to, which
// of a volume's files are leaked, a pod's run state, and when the agent may delete them.
#include "core/node/leaked_segments.h"

#include <sys/sysmacros.h>

#include <catch2/catch.hpp>

#include "core/values/timestamp.h"
#include "test_util.h"

namespace shmguard {
namespace {

TEST_CASE("MakeDev encodes major:minor as stat's st_dev does", "[leaked_segments]") {
  for (auto [major, minor] : {std::pair<unsigned, unsigned>{0, 47}, {8, 1}, {259, 3}, {0x1234, 0x56789}, {0, 0}}) {
    CAPTURE(major, minor);
    CHECK(MakeDev(major, minor) == static_cast<uint64_t>(makedev(major, minor)));
  }
}

TEST_CASE("MappedFiles reads the device and inode of each file mapping, and skips the rest", "[leaked_segments]") {
  const std::string maps =
      "55d0c8a00000-55d0c8a22000 r--p 00000000 08:01 1835012                    /usr/bin/python3.11\n"
      "7f3a40000000-7f3a52c00000 rw-s 00000000 00:2f 12                         /dev/shm/psm_1f2e (deleted)\n"
      "7f3a52c00000-7f3a52c21000 rw-p 00000000 00:00 0 \n"
      "7ffd1c5e1000-7ffd1c602000 rw-p 00000000 00:00 0                          [stack]\n"
      "garbage line\n"
      "7f3a52c00000-7f3a52c21000 rw-s 00000000 zz:01 77 /x\n"
      "7f3a52c00000-7f3a52c21000 rw-s 00000000 103:0a 4096 /dev/shm/torch_1\n";
  const std::vector<FileId> want = {{MakeDev(8, 1), 1835012}, {MakeDev(0, 0x2f), 12}, {MakeDev(0x103, 0xa), 4096}};
  CHECK(MappedFiles(maps) == want);
  CHECK(MappedFiles("").empty());
}

TEST_CASE("PodContainerOf finds the pod's container in a process's cgroups, of either driver", "[leaked_segments]") {
  const std::string uid = "8a1f2c3d-0000-4b5e-9c7d-112233445566";
  struct Case {
    std::string cgroup;
    std::optional<std::string> container;
  };
  const Case cases[] = {
      // cgroup v1, cgroupfs: every hierarchy names it; the first that does decides.
      {"12:memory:/kubepods/burstable/pod" + uid + "/4f1e9a\n11:cpu,cpuacct:/kubepods/burstable/pod" + uid +
           "/4f1e9a\n",
       "4f1e9a"},
      // systemd: the UID's dashes are underscores; containerd's scope.
      {"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod8a1f2c3d_0000_4b5e_9c7d_112233445566.slice/"
       "cri-containerd-77ab.scope\n",
       "77ab"},
      {"0::/kubepods.slice/kubepods-pod8a1f2c3d_0000_4b5e_9c7d_112233445566.slice/crio-9c.scope\n", "9c"},
      // the pod's own cgroup: a process of no container
      {"4:pids:/kubepods/pod" + uid + "\n", ""},
      // another pod, one whose UID starts with this one's, the host
      {"4:pids:/kubepods/pod11111111-0000-4b5e-9c7d-112233445566/aa\n", std::nullopt},
      {"4:pids:/kubepods/pod" + uid + "0/aa\n", std::nullopt},
      {"0::/system.slice/containerd.service\n", std::nullopt},
      {"", std::nullopt},
      {"no colons at all", std::nullopt},
  };
  for (const auto& c : cases) {
    CAPTURE(c.cgroup);
    CHECK(PodContainerOf(c.cgroup, uid) == c.container);
  }
  CHECK(PodContainerOf("4:pids:/kubepods/pod/aa\n", "") == std::nullopt);
}

TEST_CASE("FindLeaked counts the regular files no process holds, and never a symlink or directory",
          "[leaked_segments]") {
  const std::vector<ShmEntry> entries = {
      {"held", {1, 10}, ShmEntryKind::kRegular, 100},       {"left", {1, 11}, ShmEntryKind::kRegular, 300 << 20},
      {"link-to-etc", {1, 12}, ShmEntryKind::kSymlink, 0},  {"nccl", {1, 13}, ShmEntryKind::kDirectory, 4096},
      {"nccl/ring", {1, 14}, ShmEntryKind::kRegular, 4096}, {"fifo", {1, 15}, ShmEntryKind::kOther, 0},
  };
  const LeakedSegments l = FindLeaked(entries, {{1, 10}, {2, 11}});  // {2, 11}: another device's inode 11
  REQUIRE(l.files.size() == 2);
  CHECK(l.files[0].path == "left");
  CHECK(l.files[1].path == "nccl/ring");
  CHECK(l.bytes == (300 << 20) + 4096);
  CHECK(FindLeaked(entries, {{1, 10}, {1, 11}, {1, 14}}).files.empty());
}

TEST_CASE("ReadPodRunState sums the restarts and names the containers of every kind", "[leaked_segments]") {
  const auto pod = test::Yaml(R"(
status:
  initContainerStatuses:
  - {name: init, restartCount: 0, containerID: "containerd://aa", state: {terminated: {exitCode: 0}}}
  containerStatuses:
  - name: server
    restartCount: 2
    containerID: "containerd://bb"
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState: {terminated: {exitCode: 1, containerID: "containerd://b0"}}
  - {name: side, restartCount: 1, containerID: "cri-o://cc", state: {waiting: {reason: CrashLoopBackOff}}}
)");
  PodRunState s = ReadPodRunState(pod);
  CHECK(s.restarts == 3);
  CHECK_FALSE(s.running);
  CHECK(s.container_ids == std::set<std::string>{"aa", "b0", "bb", "cc"});
  CHECK(ReadPodRunState(test::Yaml("status: {containerStatuses: [{name: a, state: {running: {}}}]}")).running);
  CHECK(ReadPodRunState(test::Yaml("status: {containerStatuses: 3}")).restarts == 0);
}

TEST_CASE("ReadPodRunState reads the earliest start of what runs and the last end of what ended", "[leaked_segments]") {
  const auto pod = test::Yaml(R"(
status:
  initContainerStatuses:
  - {name: init, restartCount: 0, state: {terminated: {exitCode: 0, finishedAt: "2026-11-29T10:00:05Z"}}}
  - {name: proxy, restartCount: 0, state: {running: {startedAt: "2026-11-29T10:00:06Z"}}}
  containerStatuses:
  - name: server
    restartCount: 2
    state: {running: {startedAt: "2026-11-29T10:07:00Z"}}
    lastState: {terminated: {exitCode: 1, finishedAt: "2026-11-29T10:06:50Z"}}
)");
  const int64_t t0 = *ParseRfc3339Utc("2026-11-29T10:00:00Z");
  PodRunState s = ReadPodRunState(pod);
  CHECK(s.running);
  CHECK(s.oldest_running_start == t0 + 6);  // the sidecar started first
  CHECK(s.last_finished == t0 + 410);       // the server's crash, after the init container's end
  // A container that runs without a start time: no start is known.
  s =
      ReadPodRunState(test::Yaml("status: {containerStatuses: [{name: a, state: {running: {}}}, "
                                 "{name: b, state: {running: {startedAt: '2026-11-29T10:00:06Z'}}}]}"));
  CHECK(s.running);
  CHECK(s.oldest_running_start == 0);
}

TEST_CASE("LeftBehind counts the regular files changed before every running process started", "[leaked_segments]") {
  const int64_t t0 = *ParseRfc3339Utc("2026-11-29T10:00:00Z");
  const std::vector<ShmEntry> entries = {
      {"crashed-run", {1, 10}, ShmEntryKind::kRegular, 300 << 20, t0 + 5},
      {"same-second", {1, 11}, ShmEntryKind::kRegular, 1 << 20, t0 + 20},
      {"this-run", {1, 12}, ShmEntryKind::kRegular, 100 << 20, t0 + 25},
      {"link", {1, 13}, ShmEntryKind::kSymlink, 0, t0},
      {"dir", {1, 14}, ShmEntryKind::kDirectory, 4096, t0},
  };
  struct Case {
    const char* what;
    bool running;
    int64_t started, finished;
    std::vector<std::string> leaked;
  };
  const Case cases[] = {
      // Running since t0+20: what changed before that second; a file of that very second is left
      // out (the start is a whole second), and this run's own is never counted.
      {"running", true, t0 + 20, t0 + 19, {"crashed-run"}},
      // None running, the last end at t0+20 (a whole second): up to the end of that second.
      {"none running", false, 0, t0 + 20, {"crashed-run", "same-second"}},
      // A start the status does not show yet changes its files after the last end.
      {"none running, a new run not shown", false, 0, t0 + 7, {"crashed-run"}},
      // No time to compare with: nothing is called leaked.
      {"running, start unknown", true, 0, t0 + 19, {}},
      {"none running, no end", false, 0, 0, {}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    PodRunState run;
    run.running = c.running;
    run.oldest_running_start = c.started;
    run.last_finished = c.finished;
    const LeakedSegments l = LeftBehind(entries, run);
    std::vector<std::string> paths;
    int64_t bytes = 0;
    for (const ShmEntry& e : l.files) {
      paths.push_back(e.path);
      bytes += e.bytes;
    }
    CHECK(paths == c.leaked);
    CHECK(l.bytes == bytes);
    CHECK_FALSE(l.held_by_none);  // a guess from times: never left out of a learned peak
  }
  CHECK(FindLeaked(entries, {}).held_by_none);
}

TEST_CASE("The agent deletes leaked segments where the rule or the pod allows, and only when no container runs",
          "[leaked_segments]") {
  Policy policy;
  NamespaceRule serving;
  serving.match = {"serving-*"};
  serving.reclaim_leaked_segments = true;
  policy.namespaces = {serving};
  CHECK(ReclaimAllowed(test::Yaml("metadata: {namespace: serving-a}"), policy));
  CHECK_FALSE(ReclaimAllowed(test::Yaml("metadata: {namespace: ml}"), policy));
  CHECK(ReclaimAllowed(test::Yaml(R"(metadata: {namespace: ml, annotations: {shmguard.io/reclaim-leaked: "true"}})"),
                       policy));
  CHECK_FALSE(ReclaimAllowed(
      test::Yaml(R"(metadata: {namespace: ml, annotations: {shmguard.io/reclaim-leaked: "yes"}})"), policy));

  PodRunState waiting{.restarts = 2, .running = false, .container_ids = {"bb"}};
  CHECK(NoContainerRuns(waiting, {}));
  CHECK(NoContainerRuns(waiting, {"pause-id"}));               // the sandbox
  CHECK_FALSE(NoContainerRuns(waiting, {"bb"}));               // the container the status names still has a process
  CHECK_FALSE(NoContainerRuns(waiting, {"pause-id", "new"}));  // a container started that the status does not name yet
  PodRunState running = waiting;
  running.running = true;
  CHECK_FALSE(NoContainerRuns(running, {}));
}

}  // namespace
}  // namespace shmguard
