// ParseCount and ReadQuantityField: counts and quantities as objects write them, and the field
// named on error.
#include "core/values/field_values.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("ParseCount reads decimal digits only", "[field_values]") {
  CHECK(ParseCount("8") == 8);
  CHECK(ParseCount("0") == 0);
  CHECK(ParseCount("08") == 8);
  CHECK(ParseCount("999999999999999999") == 999999999999999999);  // 18 digits
  for (const char* bad : {"", "+8", "-1", "8.0", " 8", "8 ", "1e3", "auto", "9999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseCount(bad).has_value());
  }
}

TEST_CASE("ReadQuantityField accepts what the API server's JSON decoder accepts", "[field_values]") {
  CHECK(*ReadQuantityField(json("16Gi"), {"/x"}) == 16ll << 30);
  CHECK(*ReadQuantityField(json(" 1Gi "), {"/x"}) == 1ll << 30);
  CHECK(*ReadQuantityField(json(8), {"/x"}) == 8);
  CHECK(*ReadQuantityField(json(1e9), {"/x"}) == 1000000000);
  CHECK(*ReadQuantityField(json(nullptr), {"/x"}) == 0);
  auto bad = ReadQuantityField(json::array(), {"/spec/x"});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().where.pointer == "/spec/x");
  auto pieces = ReadQuantityField(json("12 apples"), {"/spec/containers/0", "/resources/limits/", "memory"});
  REQUIRE_FALSE(pieces.has_value());
  CHECK(pieces.error().where.pointer == "/spec/containers/0/resources/limits/memory");
}

}  // namespace
}  // namespace shmguard
