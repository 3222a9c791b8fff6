// Noticing that files changed, by polling stat(2): works for in-place rewrites and for the
// symlink swaps Kubernetes uses for mounted Secrets and ConfigMaps (..data -> ..2026_11_22...).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shmguard::io {

// What stat(2) says of a path, following symlinks; equal stamps mean "unchanged".
struct FileStamp {
  bool exists = false;
  int64_t mtime_ns = 0;
  int64_t size = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp StatFile(const std::string& path);

// Calls `on_change` from its own thread when any of `paths` changes (compared every `interval`).
// The callback runs once per change of the set, not per file.
class FileWatcher {
 public:
  FileWatcher(std::vector<std::string> paths, std::chrono::milliseconds interval, std::function<void()> on_change);
  ~FileWatcher();  // stops and joins
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

 private:
  void Run();
  std::vector<std::string> paths_;
  std::chrono::milliseconds interval_;
  std::function<void()> on_change_;
  std::vector<FileStamp> last_;  // as of construction
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace shmguard::io
