// LogDecision: one line per admission decision.
#include "server/decision_log.h"

#include "core/values/compact_json.h"
#include "core/values/quantity.h"

namespace shmguard::server {

using io::AppendLogJsonField;
using io::kMaxLogErrorBytes;
using io::kMaxLogFieldBytes;
using io::kMaxLogObjectBytes;

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
    AppendLogJsonField(x.uid, line);
    line += R"(,"kind":)";
    AppendLogJsonField(x.kind, line);
    line += R"(,"object":)";
    AppendLogJsonField(object, line, kMaxLogObjectBytes);
    line += R"(,"operation":)";
    AppendLogJsonField(x.operation, line);
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
      AppendLogJsonField(x.error, line, kMaxLogErrorBytes);
    }
    log.log(level, std::string_view(line));
  } else {
    const auto& v = io::LogTextValue;
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
