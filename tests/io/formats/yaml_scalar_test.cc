// ResolvePlainScalar: YAML 1.1 typing as go-yaml v2 / sigs.k8s.io/yaml.
#include "io/formats/yaml_scalar.h"

#include <catch2/catch.hpp>

namespace shmguard::io {
namespace {

using nlohmann::json;

TEST_CASE("ResolvePlainScalar types plain scalars as YAML 1.1 does", "[yaml_scalar]") {
  struct Case {
    const char* text;
    json expected;
  };
  const Case cases[] = {
      {"8", 8},           {"-3", -3},         {"0x1F", 31},           {"010", 8},
      {"1_000", 1000},    {"1.5", 1.5},       {"1e3", 1000.0},        {".5", 0.5},
      {"true", true},     {"yes", true},      {"On", true},           {"off", false},
      {"NO", false},      {"~", nullptr},     {"null", nullptr},      {"", nullptr},
      {"64Mi", "64Mi"},   {"1.5Gi", "1.5Gi"}, {"v1", "v1"},           {"12:30", "12:30"},
      {"1.2.3", "1.2.3"}, {"-", "-"},         {"0.0.0.0", "0.0.0.0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(ResolvePlainScalar(c.text) == c.expected);
  }
}

}  // namespace
}  // namespace shmguard::io
