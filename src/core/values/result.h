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

// Where an error is, typed: nothing reads a location back out of a string. Any part may be
// unset (empty, 0).
struct Location {
  std::string file = {};        // the input file ("-" for stdin)
  int line = 0;                 // 1-based within the file (or the document, without a file)
  int column = 0;               // 1-based
  std::string pointer = {};     // an RFC 6901 JSON pointer into the object: "/spec/containers/0"
  std::string annotation = {};  // the shmguard.io/ annotation the value came from
  std::string field = {};       // anything else named: a flag, a policy key, a quantity's role

  static Location Pointer(std::string p) { return {.pointer = std::move(p)}; }
  static Location Annotation(std::string key) { return {.annotation = std::move(key)}; }
  static Location File(std::string path) { return {.file = std::move(path)}; }
  static Location Field(std::string name) { return {.field = std::move(name)}; }
  static Location Line(int line, std::string file = {}) { return {.file = std::move(file), .line = line}; }
  bool empty() const { return file.empty() && line == 0 && pointer.empty() && annotation.empty() && field.empty(); }
  // As people read it: "file:line[:column]", "line N", then the pointer, the annotation
  // ("annotation KEY") or the field, joined by ": ".
  std::string ToString() const {
    std::string out;
    auto add = [&out](const std::string& part) {
      if (part.empty()) return;
      if (!out.empty()) out += ": ";
      out += part;
    };
    if (!file.empty()) {
      add(line > 0 ? file + ":" + std::to_string(line) + (column > 0 ? ":" + std::to_string(column) : "") : file);
    } else if (line > 0) {
      add("line " + std::to_string(line));
    }
    add(pointer);
    if (!annotation.empty()) add("annotation " + annotation);
    add(field);
    return out;
  }
};

struct Error {
  Code code = Code::kInvalidInput;
  std::string message;  // what is wrong and what to do, for a person
  Location where;

  // "where: message", or just the message when there is no location.
  std::string ToString() const { return where.empty() ? message : where.ToString() + ": " + message; }
};

inline Error MakeError(Code code, std::string message, Location where = {}) {
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
