// One log line per admission decision (uid, kind, namespace/name, operation, verdict, required
// size, latency), as text or one JSON object per line, through spdlog.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "server/admission_handler.h"

namespace shmguard::server {

enum class LogFormat { kText, kJson };

// The most bytes a log line keeps of a field a caller chose (a request's uid, kind and operation;
// the object's namespace/name; an error that quotes input), cut with "..." past it; text lines
// write control characters as \xNN so that no value starts a line of its own. A uid is 36 bytes,
// a kind at most 63, a namespace/name at most 63 + 1 + 253: nothing real is cut.
inline constexpr size_t kMaxLogFieldBytes = 128;
inline constexpr size_t kMaxLogObjectBytes = 320;
inline constexpr size_t kMaxLogErrorBytes = 1024;

// A stderr logger whose lines are plain text ("2026-11-22T07:00:00.000Z info msg k=v") or JSON
// objects ({"ts":..., "level":..., "msg":..., ...}). Lines are written in batches: at once from
// warn up, otherwise within a second; flush() before exiting.
std::shared_ptr<spdlog::logger> MakeLogger(LogFormat format);

// Sets `log`'s line pattern for `format` (MakeLogger's; the tests' loggers write to a string).
void SetLogPattern(spdlog::logger& log, LogFormat format);

// Logs `x` at info (errors at warn) with its endpoint and latency in microseconds.
void LogDecision(spdlog::logger& log, LogFormat format, const std::string& endpoint, const AdmissionExchange& x,
                 int64_t latency_us);

// A non-decision event ("config reloaded", "certificate reload failed") with key/values.
void LogEvent(spdlog::logger& log, LogFormat format, spdlog::level::level_enum level, const std::string& message,
              const nlohmann::json& fields = nlohmann::json::object());

}  // namespace shmguard::server
