// ContainerEnd finds where an object or array ends whatever its strings hold and wherever the
// escapes fall against its 16-byte blocks; ScanList finds a List's items and its kind.
#include "io/formats/json_list_scan.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

namespace shmguard::io {
namespace {

using nlohmann::json;
constexpr size_t npos = std::string_view::npos;

// A string full of what a scanner can trip on: quotes, backslashes, brackets, non-ASCII.
std::string Tricky(std::mt19937& rng) {
  static const std::vector<std::string> parts = {
      "a", "\"", "\\", "\\\"", "{", "}", "[", "]", "\\\\\"", " ", "é", "x]}", "\"{", "\n", "0123456789abcdef"};
  std::string s;
  for (size_t n = rng() % 12; n > 0; --n) s += parts[rng() % parts.size()];
  return s;
}

json RandomValue(std::mt19937& rng, int depth) {
  switch (depth > 4 ? rng() % 3 : rng() % 5) {
    case 0: return Tricky(rng);
    case 1: return static_cast<int>(rng() % 1000);
    case 2: return nullptr;
    case 3: {
      json o = json::object();
      for (size_t n = rng() % 5; n > 0; --n) o[Tricky(rng)] = RandomValue(rng, depth + 1);
      return o;
    }
    default: {
      json a = json::array();
      for (size_t n = rng() % 5; n > 0; --n) a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
  }
}

TEST_CASE("ContainerEnd finds the closing bracket at any alignment", "[json_list_scan]") {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    json v = rng() % 2 ? json::object() : json::array();
    for (size_t n = 1 + rng() % 6; n > 0; --n) {
      if (v.is_object())
        v[Tricky(rng)] = RandomValue(rng, 1);
      else
        v.push_back(RandomValue(rng, 1));
    }
    for (int indent : {-1, 2}) {
      std::string body = v.dump(indent);
      for (size_t pad = 0; pad < 17; ++pad) {
        std::string text = std::string(pad, ' ') + body + ", {\"after\": [1]}]";
        CAPTURE(text, pad);
        REQUIRE(ContainerEnd(text, pad) == pad + body.size());
        // Cut anywhere inside, nothing closes.
        size_t cut = pad + 1 + rng() % (body.size() - 1);
        REQUIRE(ContainerEnd(std::string_view(text).substr(0, cut), pad) == npos);
      }
    }
  }
}

TEST_CASE("ContainerEnd rejects a bracket that closes the wrong kind", "[json_list_scan]") {
  CHECK(ContainerEnd(R"({"a": [1, 2}})", 0) == npos);
  CHECK(ContainerEnd(R"([{"a": 1]])", 0) == npos);
  CHECK(ContainerEnd(R"({"a": "]"} tail)", 0) == 10);
  std::string long_one = R"({"padding-to-pass-one-block": [0, 1, 2, 3], "x": {"y": [)" + std::string(40, ' ') + "}]}";
  CHECK(ContainerEnd(long_one, 0) == npos);
}

TEST_CASE("ScanList locates the items and reads kind and apiVersion", "[json_list_scan]") {
  std::string text = R"({"apiVersion": "v1", "items": [{"a": "}"}, 7, "s", [1]], "kind": "Pod\u004cist"})";
  ListLayout list;
  REQUIRE(ScanList(text, list));
  CHECK(list.kind == "PodList");
  CHECK(list.api_version == "v1");
  std::vector<std::string_view> items;
  for (auto [b, e] : list.items) items.push_back(std::string_view(text).substr(b, e - b));
  CHECK(items == std::vector<std::string_view>{R"({"a": "}"})", "7", "\"s\"", "[1]"});
  CHECK(std::string_view(text).substr(list.items_array.first, list.items_array.second - list.items_array.first) ==
        R"([{"a": "}"}, 7, "s", [1]])");
  CHECK_FALSE(ScanList(R"({"kind": "Pod", "items": []})", list));  // not a List
  CHECK_FALSE(ScanList(R"({"kind": "List", "items": [1], "items": [2]})", list));
  CHECK_FALSE(ScanList(R"({"kind": "List", "items": [{]})", list));
  CHECK_FALSE(ScanList(R"({"kind": "List", "items": []} extra)", list));
  CHECK_FALSE(ScanList(R"({"kind": "List", "items": [{"a": 1},]})", list));  // a trailing comma
  CHECK_FALSE(ScanList(R"({"kind": "List", "items": [{"a": 1}, ]})", list));
}

}  // namespace
}  // namespace shmguard::io
