// Pow10, CompareAbs and Int128ToString: the 128-bit decimal arithmetic quantities rest on.
#include "core/values/internal/decimal.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

namespace shmguard::values {
namespace {

TEST_CASE("Pow10 reaches 10^37", "[decimal]") {
  CHECK(Pow10(0) == 1);
  CHECK(Pow10(18) == Int128{1'000'000'000'000'000'000});
  CHECK(Int128ToString(Pow10(37)) == "1" + std::string(37, '0'));
}

TEST_CASE("CompareAbs compares m x 10^e with an integer at any exponent without overflow", "[decimal]") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const struct {
    const char* name;
    Int128 m;
    int e;
    Int128 v;
    int want;
  } cases[] = {
      {"equal", 5, 2, 500, 0},
      {"below", 4, 2, 500, -1},
      {"above", 6, 2, 500, 1},
      {"negative m by its size", -6, 2, 500, 1},
      {"a fraction above its whole part", 12345, -2, 123, 1},
      {"a fraction exactly whole", 12300, -2, 123, 0},
      {"past 2^63 at a large exponent", 1, 400, kMax, 1},
      {"near 2^63, dividing", Int128{kMax} * 10, -1, kMax, 0},
      {"tiny against zero", 1, -100, 0, 1},
      {"tiny against one", 1, -100, 1, -1},
      {"zero against zero", 0, -100, 0, 0},
  };
  for (const auto& c : cases) {
    SECTION(c.name) { CHECK(CompareAbs(c.m, c.e, c.v) == c.want); }
  }
}

TEST_CASE("Int128ToString prints all 128 bits", "[decimal]") {
  CHECK(Int128ToString(0) == "0");
  CHECK(Int128ToString(-42) == "-42");
  CHECK(Int128ToString(std::numeric_limits<int64_t>::max()) == "9223372036854775807");
  const Int128 big = Int128{std::numeric_limits<int64_t>::max()} * 1000;
  CHECK(Int128ToString(big) == "9223372036854775807000");
  CHECK(Int128ToString(-big) == "-9223372036854775807000");
}

}  // namespace
}  // namespace shmguard::values
