// ByteBuffer: a connection's received bytes. TLS reads go straight into its spare room (no
// staging copy), a request whose size is known is given room once (no regrowth copies), and
// there are always io::kJsonReadAhead readable bytes past the end, so the JSON parser reads a
// body where it lies instead of copying it first.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

#include "io/formats/fast_json.h"

namespace shmguard::http {

class ByteBuffer {
 public:
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_.get(), size_}; }
  // Bytes readable past `offset + length` inside the buffer (received or spare).
  size_t ReadableAfter(size_t offset, size_t length) const { return capacity_ - offset - length; }

  // Room for at least n more bytes (and the read-ahead past them): where to write them; then
  // Commit how many were written.
  char* Prepare(size_t n) {
    size_t need = size_ + n + io::kJsonReadAhead;
    if (need > capacity_) Grow(need);
    return data_.get() + size_;
  }
  void Commit(size_t n) { size_ += n; }

  // Drops everything and frees the memory (a connection that will read no more requests).
  void Clear() { Consume(size_, 0); }

  // Drops the first n bytes. An emptied buffer larger than `keep` is freed: an idle connection
  // holds at most `keep` bytes, however large its last request was.
  void Consume(size_t n, size_t keep) {
    if (n >= size_) {
      size_ = 0;
      if (capacity_ > keep) {
        data_.reset();
        capacity_ = 0;
      }
      return;
    }
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
  }

 private:
  void Grow(size_t need) {
    size_t cap = capacity_ * 2 > need ? capacity_ * 2 : need;
    std::unique_ptr<char[]> bigger(new char[cap]);
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = cap;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace shmguard::http
