// The log's bounded values: a caller's field is printable, cut, and quoted where a text line needs
// it; a JSON line's field is valid UTF-8, cut at a character; each format's line pattern.
#include "io/words/log.h"

#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <sstream>

namespace shmguard::io {
namespace {

TEST_CASE("LogTextValue keeps a text line one line, bounded and parseable", "[log]") {
  CHECK(LogTextValue("abc") == "abc");
  CHECK(LogTextValue("") == R"("")");
  CHECK(LogTextValue("a b") == R"("a b")");
  CHECK(LogTextValue("k=v") == R"("k=v")");
  // A newline or an escape written as \xNN: no value starts a line or drives a terminal.
  const std::string forged = LogTextValue("uid\n2026-11-27T00:00:00.000Z info forged\x1b[2J");
  CHECK(forged.find('\n') == std::string::npos);
  CHECK(forged.find('\x1b') == std::string::npos);
  CHECK(LogTextValue(std::string(1000, 'x')).size() <= kMaxLogFieldBytes + 3);  // cut, "..." marks it
  CHECK(LogTextValue(std::string(1000, 'x'), 2000) == std::string(1000, 'x'));
}

TEST_CASE("AppendLogJsonField writes valid UTF-8, cut at a character", "[log]") {
  std::string line;
  AppendLogJsonField("a\"b\n", line);
  CHECK(line == R"("a\"b\n")");
  line.clear();
  // 3 bytes a character: a cut at 4 bytes keeps one whole character, and says it was cut.
  AppendLogJsonField("\xe2\x82\xac\xe2\x82\xac", line, 4);
  CHECK(line == "\"\xe2\x82\xac...\"");
}

TEST_CASE("SetLogPattern makes a JSON object a line, or a text line with its time and level", "[log]") {
  for (LogFormat format : {LogFormat::kJson, LogFormat::kText}) {
    std::ostringstream out;
    spdlog::logger log("t", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
    SetLogPattern(log, format);
    LogEvent(log, format, spdlog::level::warn, "config reload failed", {{"error", "line 3: bad"}});
    const std::string line = out.str();
    CAPTURE(line);
    if (format == LogFormat::kJson) {
      const auto j = nlohmann::json::parse(line);
      CHECK(j["level"] == "warning");
      CHECK(j["msg"] == "config reload failed");
      CHECK(j["error"] == "line 3: bad");
      CHECK(j["ts"].get<std::string>().back() == 'Z');
    } else {
      CHECK(line.find("Z warning config reload failed error=\"line 3: bad\"\n") != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace shmguard::io
