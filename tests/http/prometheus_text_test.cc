// PrometheusLabel and PrometheusHeader: what the text exposition format requires of a label
// value and of a metric's first lines.
#include "http/prometheus_text.h"

#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

TEST_CASE("ReadPrometheusSample reads back a sample as the writers write it", "[prometheus_text]") {
  const std::string odd = "a \"quoted\\ name\nover two lines";
  const std::string line = "x_bytes{pod=\"" + PrometheusLabel(odd) + "\",volume=\"dshm\"} 1048576";
  auto sample = ReadPrometheusSample(line);
  REQUIRE(sample);
  CHECK(sample->name == "x_bytes");
  CHECK(sample->labels == std::map<std::string, std::string>{{"pod", odd}, {"volume", "dshm"}});
  CHECK(sample->value == 1048576);

  std::ostringstream out;
  WriteSample(out, "x_total", "counter", "Things.", 7);
  std::istringstream lines(out.str());
  std::vector<PrometheusSample> read;
  for (std::string l; std::getline(lines, l);) {
    if (auto s = ReadPrometheusSample(l)) read.push_back(*s);
  }
  REQUIRE(read.size() == 1);  // HELP and TYPE are comments
  CHECK(read[0].name == "x_total");
  CHECK(read[0].labels.empty());
  CHECK(read[0].value == 7);
}

TEST_CASE("ReadPrometheusSample refuses what is not a sample", "[prometheus_text]") {
  for (const char* line :
       {"", "# HELP x y", "x{broken 1", "x{a=\"b\"", "x{a=\"b\"} not-a-number", "{a=\"b\"} 1", "x"}) {
    CAPTURE(line);
    CHECK_FALSE(ReadPrometheusSample(line));
  }
}

}  // namespace
}  // namespace shmguard::http
