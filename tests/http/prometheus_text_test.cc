// PrometheusLabel and PrometheusHeader: what the text exposition format requires of a label
// value and of a metric's first lines.
#include "http/prometheus_text.h"

#include <catch2/catch.hpp>

namespace shmguard::http {
namespace {

TEST_CASE("PrometheusLabel escapes backslash, double quote and newline, and nothing else", "[prometheus_text]") {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"Pod", "Pod"},
      {"K\"ind\\\nX", R"(K\"ind\\\nX)"},
      {"tab\there", "tab\there"},
      {"", ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.in);
    CHECK(PrometheusLabel(c.in) == c.out);
  }
}

TEST_CASE("PrometheusHeader writes the HELP and TYPE lines", "[prometheus_text]") {
  std::ostringstream out;
  PrometheusHeader(out, "shmguard_x_total", "counter", "Things.");
  CHECK(out.str() == "# HELP shmguard_x_total Things.\n# TYPE shmguard_x_total counter\n");
}

TEST_CASE("WriteSample, WriteCounterBy and WriteBuildInfo write a family as the text format has it",
          "[prometheus_text]") {
  std::ostringstream out;
  WriteSample(out, "x_total", "counter", "Things.", 7);
  CHECK(out.str() == "# HELP x_total Things.\n# TYPE x_total counter\nx_total 7\n");
  std::ostringstream by;
  WriteCounterBy(by, "y_total", "Writes.", "result", {{"ok", 2}, {"failed", 0}});
  CHECK(by.str() ==
        "# HELP y_total Writes.\n# TYPE y_total counter\ny_total{result=\"ok\"} 2\ny_total{result=\"failed\"} 0\n");
  std::ostringstream info;
  WriteBuildInfo(info, "v\"1");
  CHECK_THAT(info.str(), Catch::EndsWith("shmguard_build_info{version=\"v\\\"1\"} 1\n"));
}

}  // namespace
}  // namespace shmguard::http
