// LeakScanner on a kubelet directory and a /proc of the test's own: which pods it scans and when,
// the Events it records (ShmLeaked once per restart that left some, ShmLeakReclaimed), what it
// deletes only where allowed and idle, and its counters; and the status mode, which reads no
// /proc and deletes nothing.
#include "agent/leak_scanner.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "agent/fake_proc.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::agent {
namespace {

namespace fs = std::filesystem;
using namespace test_proc;

struct Recorded {
  AgentEvent event;
  std::string subject, message;
};

// A node of the test's own: a kubelet directory holding the pod's dshm volume with one file of
// `bytes` left in it, a /proc with one process of the pod (its cgroup `container`), and a scanner
// over them whose Events land in `events`.
struct Node {
  test::TempDir dir;
  const std::string kubelet = dir.File("kubelet"), proc = dir.File("proc");
  const std::string volume = kubelet + "/pods/" + kUid + "/volumes/kubernetes.io~empty-dir/dshm";
  const Policy policy;
  PodTable table{0.9};
  std::vector<Recorded> events;
  LeakScanner scanner;

  Node(size_t bytes, int pid, const std::string& container, LeakMode mode = LeakMode::kExact)
      : scanner(mode, LeakFinder(LeakFinderOptions{.proc_dir = proc}), kubelet, policy, table,
                [this](const AgentPod&, const std::string& subject, AgentEvent e, const std::string& message) {
                  events.push_back({e, subject, message});
                }) {
    fs::create_directories(volume);
    Write(volume + "/psm_crashed", bytes);
    FakeProcess(proc, pid, std::string("4:pids:/kubepods/pod") + kUid + "/" + container + "\n", {}, {});
  }
  std::string Metrics() const {
    std::ostringstream out;
    scanner.Collect(out);
    return out.str();
  }
};

TEST_CASE("LeakScanner tells each restart's leak once and deletes only where allowed and idle", "[leak_scanner]") {
  Node n(3 << 20, 100, "sandbox");  // the sandbox's process only: no container runs
  PodTable& table = n.table;
  LeakScanner& scanner = n.scanner;
  const std::vector<Recorded>& events = n.events;
  const std::string& volume = n.volume;
  auto now = Clock::now();

  table.Upsert(JsonNode(RestartedPod(false, false)));
  scanner.Scan(now);
  REQUIRE(events.size() == 1);
  CHECK(events[0].event == AgentEvent::kShmLeaked);
  CHECK(events[0].subject == "dshm");
  CHECK_THAT(events[0].message, Catch::StartsWith("1 file(s), 3.0 MiB, in /dev/shm are held by no process"));
  CHECK(fs::exists(volume + "/psm_crashed"));  // not allowed: kept

  scanner.Scan(now);                            // nothing changed, within the second: not scanned again
  scanner.Scan(now + std::chrono::seconds(2));  // scanned again, the same restart: not told again
  CHECK(events.size() == 1);

  table.Upsert(JsonNode(RestartedPod(false, true)));  // allowed now, and no container runs
  scanner.Scan(now + std::chrono::seconds(4));
  REQUIRE(events.size() == 2);
  CHECK(events[1].event == AgentEvent::kShmLeakReclaimed);
  CHECK_THAT(events[1].message, Catch::StartsWith("Deleted 1 file(s), 3.0 MiB, from /dev/shm (volume dshm)"));
  CHECK_FALSE(fs::exists(volume + "/psm_crashed"));

  const std::string metrics = n.Metrics();
  CHECK_THAT(metrics, Catch::Contains("\nshmguard_agent_leak_scans_total 3\n"));
  CHECK_THAT(metrics, Catch::Contains("\nshmguard_agent_leak_scan_failures_total 0\n"));
  CHECK_THAT(metrics, Catch::Contains("\nshmguard_agent_leaked_reclaimed_bytes_total 3145728\n"));
  CHECK_THAT(metrics, Catch::Contains("\nshmguard_agent_leaked_reclaimed_files_total 1\n"));
}

TEST_CASE("LeakScanner leaves alone a pod that never restarted, and one whose container runs", "[leak_scanner]") {
  Node n(1 << 20, 200, "server2");  // the server's container runs
  PodTable& table = n.table;
  LeakScanner& scanner = n.scanner;
  const std::vector<Recorded>& events = n.events;
  const std::string& volume = n.volume;
  nlohmann::json fresh = RestartedPod(true, true);
  fresh["status"]["containerStatuses"][0]["restartCount"] = 0;
  table.Upsert(JsonNode(fresh));
  scanner.Scan(Clock::now());
  CHECK_THAT(n.Metrics(), Catch::Contains("\nshmguard_agent_leak_scans_total 0\n"));

  table.Upsert(JsonNode(RestartedPod(true, true)));  // restarted, running again: told, never deleted
  scanner.Scan(Clock::now());
  REQUIRE(events.size() == 1);
  CHECK(events[0].event == AgentEvent::kShmLeaked);
  CHECK(fs::exists(volume + "/psm_crashed"));
}

// The status mode: no /proc at all (the test's has a process of the pod holding nothing, which
// the exact mode would read), the file's change time against the status's times.
TEST_CASE("LeakScanner's status mode reads the status and the files' times, and deletes nothing", "[leak_scanner]") {
  Node n(2 << 20, 200, "server2", LeakMode::kStatus);
  fs::remove_all(n.proc);  // it must not need it
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto at = [](int64_t seconds) {
    char text[32];
    const time_t t = seconds;
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(text);
  };
  // Running, started after the file was written: it is left behind, told once; the pod asks for
  // deletion, which the status mode does not do, and says so.
  nlohmann::json pod = RestartedPod(true, true);
  pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] = at(now + 5);
  n.table.Upsert(JsonNode(pod));
  n.scanner.Scan(Clock::now());
  REQUIRE(n.events.size() == 2);
  CHECK(n.events[0].event == AgentEvent::kShmLeaked);
  CHECK_THAT(n.events[0].message, Catch::StartsWith("1 file(s), 2.0 MiB, in /dev/shm"));
  CHECK(n.events[1].event == AgentEvent::kShmLeakNotReclaimed);
  CHECK_THAT(n.events[1].message, Catch::Contains("--leaked-segments=exact"));
  CHECK(fs::exists(n.volume + "/psm_crashed"));
  CHECK_THAT(n.Metrics(), Catch::Contains("\nshmguard_agent_leak_scan_failures_total 0\n"));

  // Running since before the file changed: the running process may hold it, so it is not leaked.
  Node m(2 << 20, 200, "server2", LeakMode::kStatus);
  pod = RestartedPod(true, false);
  pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] = at(now - 60);
  m.table.Upsert(JsonNode(pod));
  m.scanner.Scan(Clock::now());
  CHECK(m.events.empty());
}

}  // namespace
}  // namespace shmguard::agent
