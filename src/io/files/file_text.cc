// FileText: mmap for regular files, a read for everything else.
#include "io/files/file_text.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

namespace shmguard::io {
namespace {

Error OsError(const std::string& what, const std::string& path) {
  return MakeError(Code::kIo, what + ": " + std::strerror(errno), Location::File(path));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* KindOf(mode_t mode) {
  return S_ISCHR(mode)    ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a file";
}

Error TooLarge(const std::string& path, size_t max_bytes) {
  return MakeError(Code::kIo, "larger than the limit of " + std::to_string(max_bytes) + " bytes", Location::File(path));
}

}  // namespace

Result<FileText> FileText::Read(const std::string& path, size_t max_bytes, Readable readable) {
  // Opened without blocking (a FIFO without a writer would hold open() for ever), then looked at.
  std::optional<Fd> fd(std::in_place, ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd->get() < 0) return OsError("cannot open", path);
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return OsError("cannot read", path);
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return OsError("cannot read", path);
  }
  const bool pipe = S_ISFIFO(st.st_mode);
  // A pipe reached through /dev/fd (<(kubectl get ...)) has its writer already; a FIFO named in
  // the file system may never get one, and opening it for reading would wait for ever: refused.
  struct stat named {};
  const bool fifo = pipe && ::lstat(path.c_str(), &named) == 0 && S_ISFIFO(named.st_mode);
  if (!S_ISREG(st.st_mode) && readable != Readable::kAnything &&
      (readable == Readable::kRegularFiles || !pipe || fifo)) {
    return MakeError(Code::kIo, std::string("not a regular file (") + KindOf(st.st_mode) + ")", Location::File(path));
  }
  if (pipe) {  // read as a reader of a FIFO does: once a writer has it open, until it closes it
    fd.emplace(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd->get() < 0) return OsError("cannot open", path);
  } else if (::fcntl(fd->get(), F_SETFL, 0) != 0) {
    return OsError("cannot read", path);
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    auto size = static_cast<size_t>(st.st_size);
    if (size > max_bytes) return TooLarge(path, max_bytes);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd->get(), 0);
    if (map == MAP_FAILED) return OsError("cannot map", path);
    FileText f;
    f.map_ = map;
    f.map_size_ = size;
    f.view_ = std::string_view(static_cast<const char*>(map), size);
    return f;
  }
  // A pipe, a FIFO, a character device, or a file whose size the kernel does not know (/proc).
  return ReadFd(fd->get(), path, max_bytes);
}

Result<FileText> FileText::ReadFd(int fd, const std::string& name, size_t max_bytes) {
  std::string text;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      if (static_cast<size_t>(n) > max_bytes - text.size()) return TooLarge(name, max_bytes);
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      return OsError("cannot read", name);
    }
  }
  return FileText(std::move(text));
}

FileText::FileText(FileText&& other) noexcept { *this = std::move(other); }

FileText& FileText::operator=(FileText&& other) noexcept {
  if (this == &other) return *this;
  if (map_) ::munmap(map_, map_size_);
  bool owned = other.map_ == nullptr;
  owned_ = std::move(other.owned_);
  map_ = std::exchange(other.map_, nullptr);
  map_size_ = std::exchange(other.map_size_, 0);
  view_ = owned ? std::string_view(owned_) : other.view_;
  other.view_ = other.owned_;
  return *this;
}

FileText::~FileText() {
  if (map_) ::munmap(map_, map_size_);
}

Result<std::string> ReadFileText(const std::string& path, size_t max_bytes, Readable readable) {
  auto file = FileText::Read(path, max_bytes, readable);
  if (!file) return file.error();
  return std::string(file->view());
}

Location InFile(const std::string& file, Location where) {
  where.file = file;
  return where;
}

}  // namespace shmguard::io
