// LeakFinder: /proc and the volume's directory, read; leaked files, deleted.
#include "agent/leak_finder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace shmguard::agent {
namespace {

// A directory stream that closes itself.
struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using Dir = std::unique_ptr<DIR, DirCloser>;

// A PID's directory name ("1234") as a number; -1 for anything else.
int PidOf(const char* name) {
  int pid = 0;
  for (const char* c = name; *c; ++c) {
    if (*c < '0' || *c > '9' || pid > 100'000'000) return -1;
    pid = pid * 10 + (*c - '0');
  }
  return *name ? pid : -1;
}

// At most `max` bytes of a small file (a /proc/PID/cgroup); "" when it cannot be read.
std::string ReadSmall(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  std::string text(max, '\0');
  in.read(text.data(), static_cast<std::streamsize>(max));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

ShmEntryKind KindOf(mode_t mode) {
  if (S_ISREG(mode)) return ShmEntryKind::kRegular;
  if (S_ISDIR(mode)) return ShmEntryKind::kDirectory;
  if (S_ISLNK(mode)) return ShmEntryKind::kSymlink;
  return ShmEntryKind::kOther;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

std::map<std::string, PodProcesses> LeakFinder::ProcessesOf(const std::set<std::string>& uids) const {
  std::map<std::string, PodProcesses> out;
  for (const std::string& uid : uids) out[uid];
  Dir proc(::opendir(options_.proc_dir.c_str()));
  if (!proc || uids.empty()) return out;
  while (const dirent* e = ::readdir(proc.get())) {
    const int pid = PidOf(e->d_name);
    if (pid <= 0) continue;
    const std::string cgroup = ReadSmall(options_.proc_dir + "/" + e->d_name + "/cgroup", 64 << 10);
    if (cgroup.find("pod") == std::string::npos) continue;  // the host's
    for (const std::string& uid : uids) {
      if (auto container = PodContainerOf(cgroup, uid)) {
        out[uid].pids.push_back(pid);
        out[uid].containers.insert(*container);
        break;
      }
    }
  }
  return out;
}

std::set<FileId> LeakFinder::HeldBy(const std::vector<int>& pids, std::string& unreadable) const {
  std::set<FileId> held;
  for (int pid : pids) {
    const std::string base = options_.proc_dir + "/" + std::to_string(pid);
    Dir fds{::opendir((base + "/fd").c_str())};
    if (!fds && errno == EACCES && unreadable.empty()) unreadable = Errno(base + "/fd");
    if (fds) {
      while (const dirent* e = ::readdir(fds.get())) {
        if (e->d_name[0] == '.') continue;
        struct stat st {};
        // stat follows the fd's link to the open file itself, whatever its path in the container.
        if (::stat((base + "/fd/" + e->d_name).c_str(), &st) == 0) {
          held.insert({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
        }
      }
    }
    std::ifstream maps(base + "/maps");
    if (!maps && errno == EACCES && unreadable.empty()) unreadable = Errno(base + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      for (const FileId& id : MappedFiles(line)) held.insert(id);
    }
  }
  return held;
}

VolumeListing LeakFinder::List(const std::string& dir) const {
  VolumeListing out;
  const int root = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) {
    out.error = Errno(dir);
    return out;
  }
  // Depth-first, each directory opened below its parent without following a symlink.
  struct Frame {
    int fd;
    std::string prefix;
    int depth;
  };
  std::vector<Frame> stack{{root, "", 0}};
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    Dir d(::fdopendir(f.fd));
    if (!d) {
      ::close(f.fd);
      continue;
    }
    while (const dirent* e = ::readdir(d.get())) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      if (out.entries.size() >= options_.max_entries) {
        out.error = "more than " + std::to_string(options_.max_entries) + " entries: the rest not read";
        break;
      }
      struct stat st {};
      if (::fstatat(::dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      ShmEntry entry{f.prefix + e->d_name,
                     {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)},
                     KindOf(st.st_mode),
                     static_cast<int64_t>(st.st_blocks) * 512,
                     static_cast<int64_t>(st.st_ctim.tv_sec)};
      if (entry.kind == ShmEntryKind::kDirectory && f.depth < options_.max_depth) {
        const int sub = ::openat(::dirfd(d.get()), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) stack.push_back({sub, entry.path + "/", f.depth + 1});
      }
      out.entries.push_back(std::move(entry));
    }
  }
  for (const Frame& f : stack) ::close(f.fd);  // left when the listing stopped early
  return out;
}

int64_t LeakFinder::Reclaim(const std::string& dir, const LeakedSegments& leaked, const std::set<FileId>& held,
                            std::string& error) const {
  int64_t bytes = 0;
  for (const ShmEntry& file : leaked.files) {
    if (held.count(file.id)) continue;
    // The file's directory, opened component by component without following a symlink.
    int parent = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    std::string name = file.path;
    for (size_t slash; parent >= 0 && (slash = name.find('/')) != std::string::npos;) {
      const int next = ::openat(parent, name.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      ::close(parent);
      parent = next;
      name = name.substr(slash + 1);
    }
    if (parent < 0) continue;
    struct stat st {};
    const bool same = ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                      FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)} == file.id;
    if (same) {
      if (::unlinkat(parent, name.c_str(), 0) == 0) {
        bytes += static_cast<int64_t>(st.st_blocks) * 512;
      } else if (error.empty()) {
        error = Errno(file.path);
      }
    }
    ::close(parent);
  }
  return bytes;
}

}  // namespace shmguard::agent
