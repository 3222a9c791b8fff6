// FileText: the bytes of a file to read through once. A regular file is mapped from the page
// cache, read-only: the audit reads manifests of hundreds of MB, and reading one into a string
// first (zeroing the string, then copying into it) had been a tenth of the whole audit, on one
// thread. Anything else (a pipe, a FIFO, stdin) is read into memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "shmguard/result.h"

namespace shmguard::io {

class FileText {
 public:
  // Fails with kIo naming the path and the OS reason. A mapped file must not be truncated while
  // it is read (the process would get SIGBUS), as with any mapped file.
  static Result<FileText> Read(const std::string& path);
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

}  // namespace shmguard::io
