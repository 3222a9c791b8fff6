// FileText: the bytes of a file to read through once. A regular file is mapped from the page
// cache, read-only: the audit reads manifests of hundreds of MB, and reading one into a string
// first (zeroing the string, then copying into it) had been a tenth of the whole audit, on one
// thread. Anything else (a pipe, a FIFO, stdin) is read into memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/values/result.h"
#include "io/files/input_limits.h"

namespace shmguard::io {

// What FileText::Read accepts besides a regular file.
enum class Readable {
  kAnything,       // devices and sockets too (the audit refuses those before, by name: ExpandPaths)
  kFilesAndPipes,  // a pipe as well (<(kubectl get ...) is one): read until its writer closes it; a FIFO
                   // named in the file system is refused (it may never get a writer)
  kRegularFiles,   // nothing else: what a server re-reads on its own must never block it
};

class FileText {
 public:
  // No limit on what is read.
  static constexpr size_t kUnlimited = static_cast<size_t>(-1);

  // Fails with kIo naming the path and the OS reason, when the path is something `readable`
  // does not take (naming what it is: "a character device", "a FIFO"), or when the file holds
  // more than `max_bytes` (a regular file by its size, before anything is read; anything else
  // once that much has been read, so /dev/zero or an endless pipe costs at most `max_bytes`).
  // Opening never blocks unless `readable` takes pipes and the path is one (then it waits for
  // its writer, as any reader of a FIFO does). A mapped file must not be truncated while it is
  // read (the process would get SIGBUS), as with any mapped file.
  static Result<FileText> Read(const std::string& path, size_t max_bytes = kUnlimited,
                               Readable readable = Readable::kAnything);
  // What the file descriptor `fd` gives until its end (stdin), at most `max_bytes`; `name` names
  // it in errors. Does not close `fd`.
  static Result<FileText> ReadFd(int fd, const std::string& name, size_t max_bytes = kUnlimited);
  explicit FileText(std::string text) : owned_(std::move(text)), view_(owned_) {}

  FileText(FileText&& other) noexcept;
  FileText& operator=(FileText&& other) noexcept;
  FileText(const FileText&) = delete;
  FileText& operator=(const FileText&) = delete;
  ~FileText();

  std::string_view view() const { return view_; }
  // True when the file is mapped, so that reading it again costs no copy (a pipe cannot be
  // read again at all).
  bool mapped() const { return map_ != nullptr; }

 private:
  FileText() = default;

  std::string owned_;
  void* map_ = nullptr;  // munmap'ed on destruction
  size_t map_size_ = 0;
  std::string_view view_;
};

// The whole content of `path` (FileText::Read, copied): at most `max_bytes`, of what `readable`
// takes (io/input_limits.h has each input's limit). Fails with kIo naming the path and the
// reason, as FileText::Read does. Every layer reads its files through this (certificates,
// tokens, the policy, manifests).
Result<std::string> ReadFileText(const std::string& path, size_t max_bytes = kDefaultMaxManifestBytes,
                                 Readable readable = Readable::kFilesAndPipes);

// A parser's location (ParseYaml's line, a List item's) in `file`.
Location InFile(const std::string& file, Location where);

}  // namespace shmguard::io
