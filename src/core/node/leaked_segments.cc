// MappedFiles, PodContainerOf, FindLeaked, LeftBehind and what the agent reads of a pod to reclaim them.
#include "core/node/leaked_segments.h"

#include <algorithm>
#include <charconv>

#include "core/values/timestamp.h"

namespace shmguard {
namespace {

// The next space-separated field of `text` from `at`, moving `at` past it.
std::string_view NextField(std::string_view text, size_t& at) {
  while (at < text.size() && text[at] == ' ') ++at;
  const size_t start = at;
  while (at < text.size() && text[at] != ' ') ++at;
  return text.substr(start, at - start);
}

template <typename T>
bool Parse(std::string_view text, T& out, int base = 10) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// "cri-containerd-<id>.scope" -> "<id>"; "docker-<id>.scope", "crio-<id>.scope" alike; a
// cgroupfs component is the ID itself.
std::string ContainerIdOf(std::string_view component) {
  if (component.size() > 6 && component.substr(component.size() - 6) == ".scope") {
    component.remove_suffix(6);
  }
  for (std::string_view prefix : {"cri-containerd-", "docker-", "crio-", "containerd-"}) {
    if (component.substr(0, prefix.size()) == prefix) {
      component.remove_prefix(prefix.size());
      break;
    }
  }
  return std::string(component);
}

}  // namespace

uint64_t MakeDev(uint64_t major, uint64_t minor) {
  // glibc's gnu_dev_makedev (sys/sysmacros.h).
  return ((major & 0xfffff000ULL) << 32) | ((major & 0x00000fffULL) << 8) | ((minor & 0xffffff00ULL) << 12) |
         (minor & 0x000000ffULL);
}

std::vector<FileId> MappedFiles(std::string_view maps) {
  std::vector<FileId> out;
  while (!maps.empty()) {
    const size_t eol = maps.find('\n');
    const std::string_view line = maps.substr(0, eol);
    maps.remove_prefix(eol == std::string_view::npos ? maps.size() : eol + 1);
    size_t at = 0;
    NextField(line, at);  // address
    NextField(line, at);  // perms
    NextField(line, at);  // offset
    const std::string_view dev = NextField(line, at);
    const std::string_view inode = NextField(line, at);
    const size_t colon = dev.find(':');
    uint64_t major = 0, minor = 0, ino = 0;
    if (colon == std::string_view::npos || !Parse(dev.substr(0, colon), major, 16) ||
        !Parse(dev.substr(colon + 1), minor, 16) || !Parse(inode, ino) || ino == 0) {
      continue;
    }
    out.push_back({MakeDev(major, minor), ino});
  }
  return out;
}

std::optional<std::string> PodContainerOf(std::string_view cgroup, std::string_view pod_uid) {
  if (pod_uid.empty()) return std::nullopt;
  std::string systemd_uid(pod_uid);
  std::replace(systemd_uid.begin(), systemd_uid.end(), '-', '_');
  const std::string markers[] = {"/pod" + std::string(pod_uid), "-pod" + systemd_uid + ".slice"};
  // One line per hierarchy (cgroup v1) or "0::/path" (v2): any that names the pod will do.
  while (!cgroup.empty()) {
    const size_t eol = cgroup.find('\n');
    const std::string_view line = cgroup.substr(0, eol);
    cgroup.remove_prefix(eol == std::string_view::npos ? cgroup.size() : eol + 1);
    const size_t path_at = line.find(':', line.find(':') + 1);
    if (path_at == std::string_view::npos) continue;
    const std::string_view path = line.substr(path_at + 1);
    for (const std::string& marker : markers) {
      const size_t at = path.find(marker);
      if (at == std::string_view::npos) continue;
      const size_t end = at + marker.size();
      if (end < path.size() && path[end] != '/') continue;  // "/pod<uid>x" is another pod
      std::string_view rest = end < path.size() ? path.substr(end + 1) : std::string_view();
      rest = rest.substr(0, rest.find('/'));
      return ContainerIdOf(rest);
    }
  }
  return std::nullopt;
}

LeakedSegments FindLeaked(const std::vector<ShmEntry>& entries, const std::set<FileId>& held) {
  LeakedSegments out;
  for (const ShmEntry& e : entries) {
    if (e.kind != ShmEntryKind::kRegular || held.count(e.id)) continue;
    out.files.push_back(e);
    out.bytes += std::max<int64_t>(e.bytes, 0);
  }
  return out;
}

LeakedSegments LeftBehind(const std::vector<ShmEntry>& entries, const PodRunState& run) {
  LeakedSegments out;
  out.held_by_none = false;
  // Changed before `before` (seconds): before every process now running could touch it.
  const int64_t before = run.running ? run.oldest_running_start : run.last_finished + 1;
  if (before <= 1) return out;
  for (const ShmEntry& e : entries) {
    if (e.kind != ShmEntryKind::kRegular || e.changed >= before) continue;
    out.files.push_back(e);
    out.bytes += std::max<int64_t>(e.bytes, 0);
  }
  return out;
}

PodRunState ReadPodRunState(JsonNode pod) {
  PodRunState s;
  bool start_unknown = false;
  for (const char* list : {"initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"}) {
    for (JsonNode c : pod.Find("status").Find(list).Items()) {
      if (c.Find("restartCount").IsInteger()) s.restarts += std::max<int64_t>(c.Find("restartCount").Integer(), 0);
      if (JsonNode running = c.Find("state").Find("running"); running.IsObject()) {
        s.running = true;
        const std::optional<int64_t> started = ParseRfc3339Utc(running.Find("startedAt").String());
        if (!started) start_unknown = true;
        if (started && (s.oldest_running_start == 0 || *started < s.oldest_running_start)) {
          s.oldest_running_start = *started;
        }
      }
      for (JsonNode ended : {c.Find("state").Find("terminated"), c.Find("lastState").Find("terminated")}) {
        if (auto finished = ParseRfc3339Utc(ended.Find("finishedAt").String())) {
          s.last_finished = std::max(s.last_finished, *finished);
        }
      }
      for (JsonNode id : {c.Find("containerID"), c.Find("lastState").Find("terminated").Find("containerID")}) {
        std::string_view text = id.String();
        if (const size_t sep = text.find("://"); sep != std::string_view::npos) text.remove_prefix(sep + 3);
        if (!text.empty()) s.container_ids.emplace(text);
      }
    }
  }
  if (start_unknown) s.oldest_running_start = 0;  // a running container whose start is not known
  return s;
}

bool ReclaimAllowed(JsonNode pod, const Policy& policy) {
  JsonNode meta = pod.Find("metadata");
  if (meta.Find("annotations").Find(kReclaimLeakedAnnotation).Is("true")) return true;
  return MatchNamespace(policy, meta.StringMember("namespace")).reclaim_leaked_segments;
}

bool NoContainerRuns(const PodRunState& run, const std::set<std::string>& process_containers) {
  if (run.running) return false;
  size_t unnamed = 0;
  for (const std::string& id : process_containers) {
    if (run.container_ids.count(id)) return false;  // a container the status names still has a process
    ++unnamed;
  }
  return unnamed <= 1;  // the sandbox's pause process, at most
}

}  // namespace shmguard
