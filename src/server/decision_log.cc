// MakeLogger, LogDecision, LogEvent.
#include "server/decision_log.h"

#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <mutex>

#include "io/printable.h"
#include "shmguard/compact_json.h"
#include "shmguard/quantity.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

// A value of a text log line: printable (a newline in a uid must not start a line of its own,
// an ESC must not reach a terminal) and cut to kMaxLogFieldBytes; quoted when empty or holding
// a space, '"' or '='.
std::string TextValue(const std::string& value, size_t max = kMaxLogFieldBytes) {
  std::string v = io::Printable(value, max);
  return v.empty() || v.find_first_of(" \"=") != std::string::npos ? JsonQuoted(v) : v;
}

// A value of a JSON log line: valid UTF-8 cut to `max` bytes, quoted (JSON escapes the rest).
void AppendJsonField(const std::string& value, std::string& line, size_t max = kMaxLogFieldBytes) {
  AppendJsonQuoted(value.size() <= max ? value : io::CutUtf8(value, max), line);
}

std::string TextFields(const json& fields) {
  std::string out;
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    out += " " + it.key() + "=" + TextValue(it->is_string() ? it->get<std::string>() : it->dump(), kMaxLogErrorBytes);
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

// One decision line per request: formatted straight into a buffer (this runs on the request
// path; building a JSON object first cost more than the rest of the logging).
void LogDecision(spdlog::logger& log, LogFormat format, const std::string& endpoint, const AdmissionExchange& x,
                 int64_t latency_us) {
  auto level = x.status >= 500 ? spdlog::level::err : x.status >= 400 ? spdlog::level::warn : spdlog::level::info;
  if (!log.should_log(level)) return;
  // Cluster-scoped objects have no namespace: just the name.
  std::string object = x.namespace_name.empty() ? x.name : x.namespace_name + "/" + x.name;
  std::string required = x.required_bytes > 0 ? FormatBytes(x.required_bytes) : "-";
  if (format == LogFormat::kJson) {  // appended piece by piece: fmt parsing a 12-field pattern cost more
    std::string line;
    line.reserve(256);
    line += R"("msg":"admission","endpoint":")";
    line += endpoint;
    line += R"(","uid":)";
    AppendJsonField(x.uid, line);
    line += R"(,"kind":)";
    AppendJsonField(x.kind, line);
    line += R"(,"object":)";
    AppendJsonField(object, line, kMaxLogObjectBytes);
    line += R"(,"operation":)";
    AppendJsonField(x.operation, line);
    line += R"(,"decision":")";
    line += OutcomeName(x.outcome);
    line += R"(","verdict":")";
    line += VerdictName(x.verdict);
    line += R"(","status":)";
    line += std::to_string(x.status);
    line += R"(,"required":")";
    line += required;
    line += R"(","latency_us":)";
    line += std::to_string(latency_us);
    if (x.dry_run) line += R"(,"dry_run":true)";
    if (!x.error.empty()) {
      line += R"(,"error":)";
      AppendJsonField(x.error, line, kMaxLogErrorBytes);
    }
    log.log(level, std::string_view(line));
  } else {
    const auto& v = TextValue;
    log.log(level,
            "admission endpoint={} uid={} kind={} object={} operation={} decision={} verdict={} status={} "
            "required={} latency_us={}{}{}",
            endpoint, v(x.uid, kMaxLogFieldBytes), v(x.kind, kMaxLogFieldBytes), v(object, kMaxLogObjectBytes),
            v(x.operation, kMaxLogFieldBytes), OutcomeName(x.outcome), VerdictName(x.verdict), x.status, required,
            latency_us, x.dry_run ? " dry_run=true" : "",
            x.error.empty() ? std::string() : " error=" + v(x.error, kMaxLogErrorBytes));
  }
}

}  // namespace shmguard::server
