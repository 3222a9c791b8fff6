// MakeLogger, LogDecision, LogEvent.
#include "server/decision_log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include "shmguard/quantity.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

std::string TextFields(const json& fields) {
  std::string out;
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    std::string v = it->is_string() ? it->get<std::string>() : it->dump();
    bool quote = v.empty() || v.find_first_of(" \"=") != std::string::npos;
    out += " " + it.key() + "=" + (quote ? json(v).dump() : v);
  }
  return out;
}

}  // namespace

std::shared_ptr<spdlog::logger> MakeLogger(LogFormat format) {
  auto logger = std::make_shared<spdlog::logger>("shmguard", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    logger->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})", spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  logger->flush_on(spdlog::level::info);
  return logger;
}

void LogEvent(spdlog::logger& log, LogFormat format, spdlog::level::level_enum level,
              const std::string& message, const json& fields) {
  if (format == LogFormat::kJson) {
    json j = fields;
    j["msg"] = message;
    std::string s = j.dump();
    log.log(level, "{}", std::string_view(s).substr(1, s.size() - 2));  // fields after ts, level
  } else {
    log.log(level, "{}{}", message, TextFields(fields));
  }
}

void LogDecision(spdlog::logger& log, LogFormat format, const std::string& endpoint,
                 const AdmissionExchange& x, int64_t latency_us) {
  json fields = {{"endpoint", endpoint},
                 {"uid", x.uid},
                 {"kind", x.kind},
                 {"object", x.namespace_name + "/" + x.name},
                 {"operation", x.operation},
                 {"decision", x.decision},
                 {"verdict", VerdictName(x.verdict)},
                 {"status", x.status},
                 {"required", x.required_bytes > 0 ? FormatBytes(x.required_bytes) : "-"},
                 {"latency_us", latency_us}};
  if (x.dry_run) fields["dry_run"] = true;
  if (!x.error.empty()) fields["error"] = x.error;
  LogEvent(log, format, x.status >= 500 ? spdlog::level::err : x.status >= 400 ? spdlog::level::warn : spdlog::level::info,
           "admission", fields);
}

}  // namespace shmguard::server
