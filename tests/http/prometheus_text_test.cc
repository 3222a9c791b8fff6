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

}  // namespace
}  // namespace shmguard::http
