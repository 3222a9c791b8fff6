// StatFile and the polling FileWatcher.
#include "io/files/file_watch.h"

#include <sys/stat.h>

namespace shmguard::io {

FileStamp StatFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return FileStamp{};
  return FileStamp{true, static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino),
                   static_cast<uint64_t>(st.st_dev)};
}

FileWatcher::FileWatcher(std::vector<std::string> paths, std::chrono::milliseconds interval,
                         std::function<void()> on_change)
    : paths_(std::move(paths)), interval_(interval), on_change_(std::move(on_change)) {
  // The baseline is taken here, not in the thread: a change made before the thread first runs
  // must still count as a change.
  for (const auto& p : paths_) last_.push_back(StatFile(p));
  thread_ = std::thread([this] { Run(); });
}

FileWatcher::~FileWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void FileWatcher::Run() {
  std::vector<FileStamp> last = last_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    std::vector<FileStamp> now;
    for (const auto& p : paths_) now.push_back(StatFile(p));
    if (now == last) continue;
    last = std::move(now);
    lock.unlock();
    on_change_();
    lock.lock();
  }
}

}  // namespace shmguard::io
