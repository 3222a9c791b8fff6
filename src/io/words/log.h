// The adapters' log: one line per event on stderr through spdlog, as plain text
// ("2026-11-22T07:00:00.000Z info msg k=v") or one JSON object per line, written in batches. A
// field that came from a caller is bounded and made printable here, so that no value can forge a
// line, drive a terminal or make a line as long as a request.
#pragma once

#include <spdlog/spdlog.h>

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace shmguard::io {

enum class LogFormat { kText, kJson };

// The most bytes a log line keeps of a field a caller chose (a request's uid, kind and operation;
// the object's namespace/name; an error that quotes input), cut with "..." past it; text lines
// write control characters as \xNN so that no value starts a line of its own. A uid is 36 bytes,
// a kind at most 63, a namespace/name at most 63 + 1 + 253: nothing real is cut.
inline constexpr size_t kMaxLogFieldBytes = 128;
inline constexpr size_t kMaxLogObjectBytes = 320;
inline constexpr size_t kMaxLogErrorBytes = 1024;

// A stderr logger whose lines are plain text or JSON objects ({"ts":..., "level":..., "msg":...,
// ...}). Lines are written in batches: at once from warn up, otherwise within a second; flush()
// before exiting.
std::shared_ptr<spdlog::logger> MakeLogger(LogFormat format);

// Sets `log`'s line pattern for `format` (MakeLogger's; the tests' loggers write to a string).
void SetLogPattern(spdlog::logger& log, LogFormat format);

// An event ("config reloaded", "certificate reload failed") with key/values, each value bounded
// to kMaxLogErrorBytes.
void LogEvent(spdlog::logger& log, LogFormat format, spdlog::level::level_enum level, const std::string& message,
              const nlohmann::json& fields = nlohmann::json::object());

// A value of a text line: printable and cut to `max` bytes, quoted when empty or holding a space,
// '"' or '='.
std::string LogTextValue(const std::string& value, size_t max = kMaxLogFieldBytes);
// A value of a JSON line, appended to `line`: valid UTF-8 cut to `max` bytes, quoted.
void AppendLogJsonField(const std::string& value, std::string& line, size_t max = kMaxLogFieldBytes);

}  // namespace shmguard::io
