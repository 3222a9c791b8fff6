// Error values for the core boundary: a small code vocabulary (as leveldb's Status) and
// Result<T>, spelled with std::expected's names so it can become std::expected later.
// Policy "no" answers are not errors: they are Evaluations with reasons (evaluation.h).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace shmguard {

enum class Code {
  kInvalidInput,     // the input is malformed: bad JSON/YAML, wrong type, bad quantity
  kUnsupportedKind,  // well formed, but not something shmguard handles
  kIo,               // a file or socket could not be read or written
  kInternal,         // a bug: should never reach a user
};

// Returns "invalid input", "unsupported kind", "i/o error" or "internal error".
const char* CodeName(Code code);

struct Error {
  Code code = Code::kInvalidInput;
  std::string message;  // what is wrong and what to do, for a person
  std::string where;    // a JSON pointer ("/spec/containers/0") or "file:line"; may be empty

  // "where: message", or just the message when `where` is empty.
  std::string ToString() const { return where.empty() ? message : where + ": " + message; }
};

inline Error MakeError(Code code, std::string message, std::string where = {}) {
  return Error{code, std::move(message), std::move(where)};
}

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  // REQUIRES: has_value().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // REQUIRES: !has_value().
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

inline const char* CodeName(Code code) {
  switch (code) {
    case Code::kInvalidInput: return "invalid input";
    case Code::kUnsupportedKind: return "unsupported kind";
    case Code::kIo: return "i/o error";
    case Code::kInternal: return "internal error";
  }
  return "internal error";
}

}  // namespace shmguard
