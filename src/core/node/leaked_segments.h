// Segments leaked in a pod's /dev/shm: a memory emptyDir keeps its files across container
// restarts (Kubernetes' emptyDir documentation: "a container crashing does not remove a Pod from
// a node. The data in an emptyDir volume is safe across container crashes"), so the segments a
// crashed server or DataLoader left behind stay, count against the pod's memory limit and fill
// /dev/shm until the pod is deleted. A file is leaked when no process of the pod holds it open or
// maps it. The node agent reads that one of two ways: exactly, from the pod's processes
// (/proc/PID/cgroup, fd, maps: FindLeaked), which takes the host's PID namespace and two
// capabilities; or, with no privilege, from the pod's status and each file's change time (a file
// no process has changed since before every process now running started: LeftBehind). No I/O:
// the agent lists the volume (lstat) and hands the numbers here.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/policy/policy.h"
#include "core/values/json_node.h"

namespace shmguard {

// A file as the kernel names it: its file system's device and its inode.
struct FileId {
  uint64_t dev = 0, ino = 0;
  auto operator<=>(const FileId&) const = default;
};

// dev_t of major:minor as glibc's makedev(3) encodes it, the encoding stat(2)'s st_dev has.
uint64_t MakeDev(uint64_t major, uint64_t minor);

// The files a process maps, from the text of its /proc/PID/maps (proc(5): "address perms
// offset dev inode pathname", dev as hex major:minor): every mapping with an inode; anonymous
// mappings (inode 0) and lines that do not read as a mapping are skipped.
std::vector<FileId> MappedFiles(std::string_view maps);

// The container a process runs in, from the text of its /proc/PID/cgroup, when it is a process of
// the pod `pod_uid`: the last component of its cgroup path under the pod's cgroup (cgroupfs:
// ".../pod<uid>/<id>"; systemd: ".../kubepods-...-pod<uid with _>.slice/cri-containerd-<id>.scope"),
// with the runtime's prefix and ".scope" removed. "" for a process in the pod's cgroup itself;
// nullopt for a process of any other pod or of the host.
std::optional<std::string> PodContainerOf(std::string_view cgroup, std::string_view pod_uid);

// What is in a pod's /dev/shm volume, as lstat(2) reads each entry (the directory's own, and its
// subdirectories' to a bounded depth).
enum class ShmEntryKind { kRegular, kDirectory, kSymlink, kOther };
struct ShmEntry {
  std::string path;  // relative to the volume: "psm_1f2e", "nccl/ring-0"
  FileId id;
  ShmEntryKind kind = ShmEntryKind::kOther;
  int64_t bytes = 0;    // st_blocks × 512: the pages it holds, which is what it costs
  int64_t changed = 0;  // st_ctime's seconds: its data, links or mode last changed (node clock)
};

// The leaked files of a volume: its regular files that no process of the pod holds (`held`:
// every FileId its processes have open or mapped). A symlink, a directory, a FIFO or a socket is
// never leaked (never deleted): only a regular file holds pages.
struct LeakedSegments {
  std::vector<ShmEntry> files;
  int64_t bytes = 0;
  // Read from the pod's processes (FindLeaked): no running process holds them, so they may be
  // left out of the peak a workload learns its size from. LeftBehind's are not: a segment a new
  // run reopened without writing it looks the same, and leaving it out would teach the workload
  // a size below what it uses.
  bool held_by_none = true;
};
LeakedSegments FindLeaked(const std::vector<ShmEntry>& entries, const std::set<FileId>& held);

// What the node agent reads of a pod's containers from its status: the restarts of all its
// containers, whether any of them runs, the IDs of the containers it knows (the runtime's,
// without "containerd://"), and two times in seconds since the epoch, whole seconds as the
// kubelet writes them from this node's clock: the earliest start of the containers running now,
// and the latest end of those that ended (0: none given).
struct PodRunState {
  int64_t restarts = 0;
  bool running = false;
  std::set<std::string> container_ids;
  int64_t oldest_running_start = 0;
  int64_t last_finished = 0;
};
PodRunState ReadPodRunState(JsonNode pod);

// The leaked files of a volume read without the pod's processes: its regular files last changed
// before every process that runs in the pod now started, which therefore none of them created or
// wrote. While a container runs: changed before the earliest start of the running ones (a start
// is a whole second, so a file changed within that second is left out). While none runs: changed
// no later than the last end; a container started since, which the status does not show yet,
// changes its files after that. None while a container runs without a start time. What this
// cannot see (docs/agent.md): a file a running process reopened without writing it is still
// called leaked, and a file left while another container of the pod kept running is not.
LeakedSegments LeftBehind(const std::vector<ShmEntry>& entries, const PodRunState& run);

inline constexpr char kReclaimLeakedAnnotation[] = "shmguard.io/reclaim-leaked";

// Whether the agent may delete `pod`'s leaked segments: its namespace's rule says
// reclaimLeakedSegments, or the pod is annotated shmguard.io/reclaim-leaked: "true".
bool ReclaimAllowed(JsonNode pod, const Policy& policy);

// Whether deleting is safe now: no container of the pod runs, by its status (`run`) and by its
// processes (`process_containers`: the containers its processes run in, PodContainerOf's): at
// most one, the pod's sandbox, whose ID the status does not name, and none the status names.
bool NoContainerRuns(const PodRunState& run, const std::set<std::string>& process_containers);

}  // namespace shmguard
