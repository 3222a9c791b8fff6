// ParseBounded: an answer's values counted first, in linear time, and parsed only within the bound.
#include "kube/bounded_json.h"

#include <catch2/catch.hpp>
#include <string>

namespace shmguard::kube {
namespace {

TEST_CASE("ParseBounded counts every object, array and scalar, and refuses one past its bound", "[bounded_json]") {
  // {"a": [1, "x", null], "b": {}}: the object, the array, three scalars, the inner object.
  const std::string text = R"({"a": [1, "x", null], "b": {}})";
  auto six = ParseBounded(text, 6);
  REQUIRE(six);
  CHECK((*six)["a"][1] == "x");
  CHECK_FALSE(ParseBounded(text, 5));
  auto broken = ParseBounded("{\"a\": [1,", 100);
  REQUIRE(broken);
  CHECK(broken->is_discarded());
  // A million empty objects: refused at the bound, without building them (the count is linear,
  // where nlohmann's callback parser rescans the array at each object).
  std::string items = "[";
  for (int i = 0; i < 1'000'000; ++i) items += i ? ",{}" : "{}";
  items += "]";
  CHECK_FALSE(ParseBounded(items, 100'000));
  auto all = ParseBounded(items, 1'000'001);
  REQUIRE(all);
  CHECK(all->size() == 1'000'000);
}

}  // namespace
}  // namespace shmguard::kube
