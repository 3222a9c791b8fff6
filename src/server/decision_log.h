// One log line per admission decision (uid, kind, namespace/name, operation, verdict, required
// size, latency), as text or one JSON object per line, through the adapters' log (io/log.h).
#pragma once

#include <cstdint>
#include <string>

#include "io/words/log.h"
#include "server/admission_handler.h"

namespace shmguard::server {

using io::LogEvent;
using io::LogFormat;
using io::MakeLogger;
using io::SetLogPattern;

// Logs `x` at info (errors at warn) with its endpoint and latency in microseconds; each field a
// caller chose is bounded (io::kMaxLogFieldBytes and the others).
void LogDecision(spdlog::logger& log, LogFormat format, const std::string& endpoint, const AdmissionExchange& x,
                 int64_t latency_us);

}  // namespace shmguard::server
