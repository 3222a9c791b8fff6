// MakeLogger, SetLogPattern, LogEvent, and the bounded values of a line.
#include "io/words/log.h"

#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <mutex>

#include "core/values/compact_json.h"
#include "io/words/printable.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

std::string TextFields(const json& fields) {
  std::string out;
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    out +=
        " " + it.key() + "=" + LogTextValue(it->is_string() ? it->get<std::string>() : it->dump(), kMaxLogErrorBytes);
  }
  return out;
}

// Collects lines and writes them to stderr in batches: spdlog's stderr sink flushes (one write
// syscall) per line, which on the request path cost as much as a small admission decision.
// Flushed when 64 KiB are pending, at warn and above, and every second (MakeLogger).
class BufferedStderrSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    buffer_.append(formatted.data(), formatted.size());
    if (buffer_.size() >= (64 << 10)) flush_();
  }
  void flush_() override {
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t n = ::write(STDERR_FILENO, buffer_.data() + done, buffer_.size() - done);
      if (n <= 0) break;  // stderr gone: drop rather than block the server
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
  }

 private:
  std::string buffer_;
};

}  // namespace

// A value of a text log line: printable (a newline in a uid must not start a line of its own,
// an ESC must not reach a terminal) and cut to kMaxLogFieldBytes; quoted when empty or holding
// a space, '"' or '='.
std::string LogTextValue(const std::string& value, size_t max) {
  std::string v = Printable(value, max);
  return v.empty() || v.find_first_of(" \"=") != std::string::npos ? JsonQuoted(v) : v;
}

// A value of a JSON log line: valid UTF-8 cut to `max` bytes, quoted (JSON escapes the rest).
void AppendLogJsonField(const std::string& value, std::string& line, size_t max) {
  AppendJsonQuoted(value.size() <= max ? value : CutUtf8(value, max), line);
}

void SetLogPattern(spdlog::logger& log, LogFormat format) {
  if (format == LogFormat::kJson) {
    log.set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})", spdlog::pattern_time_type::utc);
  } else {
    log.set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
}

std::shared_ptr<spdlog::logger> MakeLogger(LogFormat format) {
  auto logger = std::make_shared<spdlog::logger>("shmguard", std::make_shared<BufferedStderrSink>());
  SetLogPattern(*logger, format);
  logger->flush_on(spdlog::level::warn);
  spdlog::drop("shmguard");
  spdlog::register_logger(logger);
  spdlog::flush_every(std::chrono::seconds(1));  // spdlog 1.10 counts whole seconds
  return logger;
}

void LogEvent(spdlog::logger& log, LogFormat format, spdlog::level::level_enum level, const std::string& message,
              const json& fields) {
  if (format == LogFormat::kJson) {
    json j = fields;
    j["msg"] = message;
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    log.log(level, "{}", std::string_view(s).substr(1, s.size() - 2));  // fields after ts, level
  } else {
    log.log(level, "{}{}", message, TextFields(fields));
  }
}

}  // namespace shmguard::io
