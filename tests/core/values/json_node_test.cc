// JsonNode: the same reads over both backings, an nlohmann value and a simdjson-layout tape
// (io::ParseJsonView), including the Kubernetes rules the core relies on (null is absent, the
// last of a repeated key wins) and FollowPointer.
#include "core/values/json_node.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "io/formats/fast_json.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr const char* kDoc = R"({
  "kind": "Pod", "n": -7, "big": 18446744073709551615, "f": 1.5, "t": true, "no": false, "nil": null,
  "list": [1, "two", {"three": 3}, [], null],
  "empty": {}, "dup": "first", "dup": "last",
  "spec": {"containers": [{"name": "a"}, {"name": "b", "env": [{"name": "X", "value": "1"}]}]}
})";

// Runs `check` on the view of kDoc over each backing.
template <typename Check>
void OnBoth(Check check) {
  json tree = json::parse(kDoc);  // nlohmann keeps the last "dup" as well
  SECTION("nlohmann") { check(JsonNode(tree), false); }
  SECTION("tape") {
    auto view = io::ParseJsonView(kDoc);
    REQUIRE(view.has_value());
    check(*view, true);
  }
}

TEST_CASE("JsonNode reads scalars the same over both backings", "[json_node]") {
  OnBoth([](JsonNode root, bool) {
    CHECK(root.IsObject());
    CHECK(root.Find("kind").Is("Pod"));
    CHECK(root.StringMember("kind") == "Pod");
    CHECK(root.StringMember("n") == "");  // not a string
    CHECK(root.Find("n").IsInteger());
    CHECK(root.Find("n").Integer() == -7);
    CHECK(root.Find("big").IsInteger());
    CHECK(root.Find("f").IsFloat());
    CHECK(root.Find("f").Integer() == 0);
    CHECK(root.Find("t").Bool());
    CHECK_FALSE(root.Find("no").Bool());
    CHECK(root.Find("no").IsBool());
    CHECK(root.Find("dup").Is("last"));
    CHECK(root.Find("kind").Dump() == "\"Pod\"");
  });
}

TEST_CASE("JsonNode treats null as absent and never throws on a wrong type", "[json_node]") {
  OnBoth([](JsonNode root, bool) {
    CHECK_FALSE(root.Find("nil"));  // a null member is an absent one
    CHECK_FALSE(root.Find("missing"));
    CHECK(root.Find("missing").type() == JsonNode::Type::kAbsent);
    CHECK_FALSE(root.Find("kind").Find("x"));                           // Find on a string
    CHECK(root.Find("kind").Items().begin() == std::default_sentinel);  // Items on a string
    CHECK(root.Find("list").String().empty());
    CHECK_FALSE(root.Find("list").Bool());
    CHECK(root.Find("missing").Copy().is_null());
    CHECK(root.Find("empty").IsObject());
    CHECK(root.Find("empty").Members().empty());
  });
}

TEST_CASE("JsonNode walks lists in order and members of objects", "[json_node]") {
  OnBoth([](JsonNode root, bool) {
    std::vector<JsonNode::Type> types;
    for (JsonNode item : root.Find("list").Items()) types.push_back(item.type());
    CHECK(types == std::vector<JsonNode::Type>{JsonNode::Type::kInteger, JsonNode::Type::kString,
                                               JsonNode::Type::kObject, JsonNode::Type::kArray, JsonNode::Type::kNull});
    int n = 0;
    for (JsonNode item : root.Find("list").Items()) n += item.Find("three").Integer();
    CHECK(n == 3);
    std::vector<std::string> keys;
    JsonNode first = *root.Find("spec").Find("containers").Items().begin();
    for (const auto& [key, value] : first.Members()) keys.emplace_back(key);
    CHECK(keys == std::vector<std::string>{"name"});
    // Members: null ones included, by key on a tape as in nlohmann.
    std::vector<std::string> top;
    for (const auto& [key, value] : root.Members()) top.emplace_back(key);
    CHECK(std::count(top.begin(), top.end(), "nil") == 1);
    CHECK(top.front() == "big");
  });
}

TEST_CASE("FollowPointer follows keys and list indexes", "[json_node]") {
  OnBoth([](JsonNode root, bool) {
    CHECK(FollowPointer(root, "/spec/containers/1/name").Is("b"));
    CHECK(FollowPointer(root, "/spec/containers/1/env/0/value").Is("1"));
    CHECK(FollowPointer(root, "").IsObject());
    CHECK_FALSE(FollowPointer(root, "/spec/containers/2"));
    CHECK_FALSE(FollowPointer(root, "/spec/containers/x"));
    CHECK_FALSE(FollowPointer(root, "/kind/0"));
  });
}

}  // namespace
}  // namespace shmguard
