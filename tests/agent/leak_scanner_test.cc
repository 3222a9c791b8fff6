// LeakScanner on a kubelet directory and a /proc of the test's own: which pods it scans and when,
// the Events it records (ShmLeaked once per restart that left some, ShmLeakReclaimed), what it
// deletes only where allowed and idle, and its counters.
#include "agent/leak_scanner.h"

#include <catch2/catch.hpp>
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
  LeakScanner scanner{LeakFinder(LeakFinderOptions{.proc_dir = proc}), kubelet, policy, table,
                      [this](const AgentPod&, const std::string& subject, AgentEvent e, const std::string& message) {
                        events.push_back({e, subject, message});
                      }};

  Node(size_t bytes, int pid, const std::string& container) {
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

}  // namespace
}  // namespace shmguard::agent
