// LogDecision and LogEvent: one line per decision, as JSON objects a log pipeline can parse
// (whatever the object's name holds) or as text whose values are quoted when they need it.
#include "server/decision_log.h"

#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <sstream>

namespace shmguard::server {
namespace {

using io::kMaxLogErrorBytes;
using io::kMaxLogFieldBytes;
using io::kMaxLogObjectBytes;
using nlohmann::json;

struct Captured {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> log;
  explicit Captured(LogFormat format)
      : log(std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_st>(out))) {
    SetLogPattern(*log, format);
  }
  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

AdmissionExchange Patched() {
  AdmissionExchange x;
  x.uid = "u-1";
  x.kind = "Pod";
  x.namespace_name = "team-a";
  x.name = "we\"ird name=\n";  // a name no real object has, but a log must survive
  x.operation = "CREATE";
  x.outcome = Outcome::kPatched;
  x.verdict = Verdict::kPatch;
  x.required_bytes = 14078ll << 20;
  x.dry_run = true;
  return x;
}

TEST_CASE("LogDecision writes one JSON object per decision", "[decision_log]") {
  Captured c(LogFormat::kJson);
  LogDecision(*c.log, LogFormat::kJson, "mutate", Patched(), 321);
  AdmissionExchange failed;
  failed.status = 400;
  failed.error = "request body is not valid JSON";
  LogDecision(*c.log, LogFormat::kJson, "validate", failed, 5);
  auto lines = c.Lines();
  REQUIRE(lines.size() == 2);
  json first = json::parse(lines[0]);
  CHECK(first["level"] == "info");
  CHECK(first["msg"] == "admission");
  CHECK(first["endpoint"] == "mutate");
  CHECK(first["object"] == "team-a/we\"ird name=\n");
  CHECK(first["decision"] == "patched");
  CHECK(first["verdict"] == "patch");
  CHECK(first["status"] == 200);
  CHECK(first["required"] == "14078Mi");
  CHECK(first["latency_us"] == 321);
  CHECK(first["dry_run"] == true);
  CHECK_FALSE(first.contains("error"));
  json second = json::parse(lines[1]);
  CHECK(second["level"] == "warning");  // 4xx
  CHECK(second["decision"] == "error");
  CHECK(second["required"] == "-");
  CHECK(second["error"] == "request body is not valid JSON");
  CHECK_FALSE(second.contains("dry_run"));
}

TEST_CASE("LogDecision's text lines quote values with spaces, quotes or =", "[decision_log]") {
  Captured c(LogFormat::kText);
  LogDecision(*c.log, LogFormat::kText, "mutate", Patched(), 321);
  const std::string line = c.out.str();
  CHECK_THAT(line, Catch::Contains(" info admission endpoint=mutate uid=u-1 kind=Pod "
                                   "object=\"team-a/we\\\"ird name=\\\\x0a\" operation=CREATE decision=patched "
                                   "verdict=patch status=200 required=14078Mi latency_us=321 dry_run=true\n"));
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);  // the name's newline is escaped
}

// A caller chooses the uid, kind and name it sends: none of them may forge a line, drive a
// terminal or make a line as long as the request.
TEST_CASE("LogDecision bounds and escapes the fields a caller chose", "[decision_log]") {
  AdmissionExchange x = Patched();
  x.uid = "u\n2026-11-26T00:00:00.000Z info admission endpoint=mutate uid=forged";
  x.kind = std::string(1 << 20, 'K');
  x.name = "\x1b[2J" + std::string(5000, 'n');
  x.error = std::string(100000, 'e');
  for (LogFormat format : {LogFormat::kText, LogFormat::kJson}) {
    Captured c(format);
    LogDecision(*c.log, format, "mutate", x, 1);
    const std::string out = c.out.str();
    CAPTURE(format == LogFormat::kJson);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.size() < kMaxLogFieldBytes * 2 + kMaxLogObjectBytes + kMaxLogErrorBytes + 512);
    CHECK(out.find(std::string(kMaxLogFieldBytes, 'K') + "...") != std::string::npos);
    CHECK(out.find(std::string(kMaxLogFieldBytes + 1, 'K')) == std::string::npos);
    if (format == LogFormat::kJson) {
      json line = json::parse(c.Lines().at(0));
      CHECK(line["uid"].get<std::string>().rfind("u\n2026", 0) == 0);  // escaped by JSON, whole
      CHECK(line["error"].get<std::string>().size() == kMaxLogErrorBytes + 3);
    }
  }
}

TEST_CASE("LogEvent adds its fields after the message", "[decision_log]") {
  Captured j(LogFormat::kJson);
  LogEvent(*j.log, LogFormat::kJson, spdlog::level::err, "config reload failed", {{"error", "x: y"}, {"n", 3}});
  json line = json::parse(j.Lines().at(0));
  CHECK(line["level"] == "error");
  CHECK(line["msg"] == "config reload failed");
  CHECK(line["error"] == "x: y");
  CHECK(line["n"] == 3);
  Captured t(LogFormat::kText);
  LogEvent(*t.log, LogFormat::kText, spdlog::level::info, "config reloaded", {{"file", "/etc/shmguard/policy.yaml"}});
  CHECK_THAT(t.out.str(), Catch::EndsWith(" info config reloaded file=/etc/shmguard/policy.yaml\n"));
}

}  // namespace
}  // namespace shmguard::server
