// ParseJsonView / ParseJsonPruned: what is read and dropped, errors, and — over all test data —
// that reading in place or dropping never changes an Evaluation (shmguard/relevant_fields.h).
#include "io/fast_json.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "cli/audit_command.h"
#include "io/yaml_emit.h"
#include "io/yaml_json.h"
#include "shmguard/evaluation.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

std::vector<JsonNode> ItemsOf(JsonNode list) {
  std::vector<JsonNode> out;
  for (JsonNode item : list.Items()) out.push_back(item);
  return out;
}

TEST_CASE("ParseJsonPruned keeps what the evaluation reads and drops the rest", "[fast_json]") {
  auto j = ParseJsonPruned(R"({"kind":"Pod","status":{"phase":"Running"},
    "metadata":{"name":"p","managedFields":[{"manager":"x"}],"annotations":{"a":"1","shmguard.io/num-workers":"8"}},
    "spec":{"tolerations":[{}],"containers":[{"name":"t","env":[{"name":"A","value":"1"},
      {"name":"PET_NNODES","value":"2"},{"name":"B","valueFrom":{}}],"ports":[{"containerPort":1}],
      "resources":{"limits":{"memory":"1Gi","nvidia.com/gpu":2}}}],"hostIPC":false,"n":-3,"u":18446744073709551615,"d":1.5}})");
  REQUIRE(j.has_value());
  json expected = json::parse(R"({"kind":"Pod","metadata":{"name":"p","annotations":{"shmguard.io/num-workers":"8"}},
    "spec":{"containers":[{"name":"t","env":[{"name":"PET_NNODES","value":"2"}],
      "resources":{"limits":{"memory":"1Gi","nvidia.com/gpu":2}}}],"hostIPC":false,"n":-3,"u":18446744073709551615,"d":1.5}})");
  CHECK(*j == expected);
}

TEST_CASE("ParseJsonView reads every kind of value in place", "[fast_json]") {
  std::string text = R"({"s":"a\"b","i":-3,"u":18446744073709551615,"d":1.5,"e":2e3,"t":true,"f":false,"n":null,
    "l":[1,"x",{"k":"v"}],"o":{"z":1,"a":2},"dup":1,"dup":2,
    "empty":[],"nested":[null,[2,[3.5]],{"a":[]},-4]})";
  auto root = ParseJsonView(text);
  REQUIRE(root.has_value());
  CHECK(root->IsObject());
  CHECK(root->StringMember("s") == "a\"b");
  CHECK(root->Find("i").Integer() == -3);
  CHECK(root->Find("u").IsInteger());
  CHECK(root->Find("u").Dump() == "18446744073709551615");
  CHECK(root->Find("d").IsFloat());
  CHECK(root->Find("d").Dump() == "1.5");
  CHECK(root->Find("e").Dump() == "2000.0");
  CHECK(root->Find("t").Bool());
  CHECK_FALSE(root->Find("f").Bool());
  CHECK_FALSE(root->Find("n"));  // null reads as absent
  CHECK_FALSE(root->Find("missing"));
  CHECK(root->Find("dup").Integer() == 2);  // the last of a key given twice, as nlohmann keeps
  std::vector<JsonNode> items = ItemsOf(root->Find("l"));
  REQUIRE(items.size() == 3);
  CHECK(items[1].Is("x"));
  CHECK(items[2].StringMember("k") == "v");
  CHECK(root->Find("l").Dump() == R"([1,"x",{"k":"v"}])");
  auto members = root->Find("o").Members();
  REQUIRE(members.size() == 2);
  CHECK(members[0].first == "z");  // the document's order
  CHECK(ItemsOf(root->Find("s")).empty());
  CHECK(ItemsOf(root->Find("o")).empty());
  CHECK(ItemsOf(root->Find("empty")).empty());
  std::vector<JsonNode> nested = ItemsOf(root->Find("nested"));  // each item skipped whole
  REQUIRE(nested.size() == 4);
  CHECK(nested[0].IsNull());
  CHECK(ItemsOf(nested[1]).size() == 2);
  CHECK(ItemsOf(nested[2].Find("a")).empty());
  CHECK(nested[3].Integer() == -4);
  CHECK(root->Find("l").Find("k").type() == JsonNode::Type::kAbsent);
}

TEST_CASE("ParseJsonView and nlohmann read the same values", "[fast_json]") {
  json doc = json::parse(
      R"({"a":[{"b":"c","n":7,"x":-1.25e-7,"big":9223372036854775808}],"m":{"k":null},"l":[null,[1,2],3,[]]})");
  std::string text = doc.dump();
  auto view = ParseJsonView(text);
  REQUIRE(view.has_value());
  JsonNode tree = doc;
  for (JsonNode n : {*view, tree}) {
    JsonNode item = ItemsOf(n.Find("a")).at(0);
    CHECK(ItemsOf(n.Find("a")).size() == 1);
    std::vector<JsonNode> l = ItemsOf(n.Find("l"));
    REQUIRE(l.size() == 4);
    CHECK(l[0].IsNull());
    CHECK(ItemsOf(l[1]).size() == 2);
    CHECK(l[2].Integer() == 3);
    CHECK(ItemsOf(l[3]).empty());
    CHECK(item.StringMember("b") == "c");
    CHECK(item.Find("n").Integer() == 7);
    CHECK(item.Find("x").Dump() == doc["a"][0]["x"].dump());
    CHECK(item.Find("big").Integer() == static_cast<int64_t>(9223372036854775808ull));
    CHECK(n.Find("m").Members().size() == 1);
    CHECK(n.Find("m").Members()[0].second.IsNull());
    CHECK(n.Copy() == doc);
  }
}

TEST_CASE("ParseJsonPruned rejects invalid and too deeply nested JSON", "[fast_json]") {
  for (std::string bad : {std::string("{"), std::string("{\"a\":}"), std::string("[1,]"), std::string("{} {}"),
                          std::string("\"\\ud800\""), std::string("nul"), std::string("")}) {
    CAPTURE(bad);
    auto r = ParseJsonPruned(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("not valid JSON"));
  }
  for (int depth : {129, 1000, 100000}) {
    CAPTURE(depth);
    auto r = ParseJsonPruned(std::string(depth, '[') + std::string(depth, ']'));
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("nested deeper than 128"));
  }
  CHECK(ParseJsonPruned(std::string(100, '[') + std::string(100, ']')).has_value());
  for (int depth : {129, 100000}) {
    CAPTURE(depth);
    auto r = ParseJsonView(std::string(depth, '[') + std::string(depth, ']'));
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("nested deeper than 128"));
  }
  CHECK(ParseJsonView(std::string(128, '[') + std::string(128, ']')).has_value());
  CHECK_THAT(ParseJsonView("{\"a\":}").error().message, Catch::Contains("not valid JSON"));
}

void CheckSameEvaluation(const json& full, JsonNode pruned, const std::string& what) {
  Evaluation a = Evaluate(full, Policy{}, {.namespace_name = "team-a"});
  Evaluation b = Evaluate(pruned, Policy{}, {.namespace_name = "team-a"});
  CAPTURE(what);
  CHECK(a.verdict == b.verdict);
  CHECK(a.AllFindings() == b.AllFindings());
  CHECK(a.patch == b.patch);
  if (!a.patch.empty()) CHECK(full.patch(a.patch.ToJson()).is_object());  // and it applies to the full object
}

// The view of the JSON text, and both pruning parsers: simdjson over the JSON text, libyaml over
// the YAML text.
void CheckSameEvaluation(const json& full, const std::string& what) {
  std::string text = full.dump();
  auto view = ParseJsonView(text);
  REQUIRE(view.has_value());
  CheckSameEvaluation(full, *view, what + " (view)");
  auto from_json = ParseJsonPruned(text);
  REQUIRE(from_json.has_value());
  CheckSameEvaluation(full, *from_json, what + " (JSON)");
  auto from_yaml = ParseYaml(JsonToYaml(full), 1, /*prune=*/true);
  REQUIRE(from_yaml.has_value());
  CheckSameEvaluation(full, *from_yaml, what + " (YAML)");
}

TEST_CASE("Reading in place or pruning never changes an Evaluation over the real-world data", "[fast_json][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  std::istringstream none;
  auto result = cli::CollectAudit({test::CorpusPath(), std::string(SOURCE_DIR) + "/examples"}, Policy{}, none);
  int compared = 0;
  for (const auto& doc : result.documents) {
    if (!doc.is_json && !doc.text.empty()) {  // the document as written: same result, same errors
      auto pruned = ParseYaml(doc.text, doc.line, /*prune=*/true);
      CAPTURE(doc.file, doc.index);
      REQUIRE(pruned.has_value() == doc.object.has_value());
      if (!pruned) CHECK(pruned.error().ToString() == ParseYaml(doc.text, doc.line).error().ToString());
      if (pruned && doc.object->is_object()) CheckSameEvaluation(*doc.object, *pruned, doc.file + " as written");
    }
    if (!doc.object || !doc.object->is_object()) continue;
    CheckSameEvaluation(*doc.object, doc.file + ":" + std::to_string(doc.index));
    json annotated = *doc.object;
    annotated["metadata"]["annotations"]["shmguard.io/num-workers"] = "4";
    annotated["metadata"]["annotations"]["shmguard.io/batch-bytes"] = "16Mi";
    annotated["metadata"]["annotations"]["unrelated/key"] = "x";
    CheckSameEvaluation(annotated, doc.file + ":" + std::to_string(doc.index) + " annotated");
    ++compared;
  }
  CHECK(compared >= 100);
}

}  // namespace
}  // namespace shmguard::io

namespace shmguard::io {
namespace {

using nlohmann::json;

struct Handed {
  int item;
  Result<json> object;
  std::string kind, api_version;
  ObjectText at;  // the item's text and where it starts
};

std::vector<Handed> HandOut(const std::string& text) {
  std::vector<Handed> out;
  auto ok = ForEachJsonObjectPruned(text, [&](int item, PendingObject&& object, const std::string& kind,
                                              const std::string& api, const ObjectText& at) {
    out.push_back({item, object(), kind, api, at});
  });
  REQUIRE(ok.has_value());
  return out;
}

TEST_CASE("ForEachJsonObjectPruned finds a List's items in the text, whatever is inside them", "[fast_json]") {
  // kubectl sorts keys: "kind" comes after "items". Strings hold brackets, quotes and escapes.
  std::string text = R"({"apiVersion": "v1", "items": [
    {"metadata": {"name": "a]}\"[{", "annotations": {"shmguard.io/num-workers": "8"}}, "spec": {}},
    {"metadata": {"name": "b\\"}, "spec": {"containers": [{"name": "c", "args": ["--x=[1,2]"]}]}},
    7, "text", null, [1, [2]],
    {"metadata": {"name": "bad"}, "spec": tru},
    {"metadata": {"name": "last"}}
  ], "metadata": {"resourceVersion": "1"}, "\u006bind": "PodList"})";
  auto items = HandOut(text);
  REQUIRE(items.size() == 8);
  for (const auto& h : items) {
    CHECK(h.kind == "PodList");
    CHECK(h.api_version == "v1");
  }
  CHECK((*items[0].object)["metadata"]["name"] == "a]}\"[{");
  CHECK((*items[0].object)["metadata"]["annotations"] == json({{"shmguard.io/num-workers", "8"}}));
  CHECK((*items[1].object)["metadata"]["name"] == "b\\");
  CHECK((*items[1].object)["spec"]["containers"][0]["args"][0] == "--x=[1,2]");
  CHECK(*items[2].object == 7);
  CHECK(*items[3].object == "text");
  CHECK(items[4].object->is_null());
  CHECK(*items[5].object == json::parse("[1, [2]]"));
  REQUIRE_FALSE(items[6].object.has_value());  // fails alone, naming its line
  CHECK(items[6].object.error().where.line == 5);
  CHECK((*items[7].object)["metadata"]["name"] == "last");
  // Each item's text, line and column, for locating its findings.
  CHECK(items[0].at.line == 2);
  CHECK(items[0].at.column == 5);
  CHECK(items[0].at.text.substr(0, 13) == R"({"metadata": )");
  CHECK(items[6].at.line == 5);
  CHECK(items[6].at.text == R"({"metadata": {"name": "bad"}, "spec": tru})");
  CHECK(items[7].at.line == 6);
}

TEST_CASE("ForEachJsonObjectPruned leaves broken or unusual Lists to the full parser", "[fast_json]") {
  std::string truncated = R"({"kind": "List", "items": [{"a": 1}, {"b": )";
  CHECK_FALSE(ForEachJsonObjectPruned(truncated, [](int, PendingObject&&, const std::string&, const std::string&,
                                                    const ObjectText&) {
                FAIL("nothing may be handed out of a broken document");
              }).has_value());
  // Invalid JSON outside the items (the items alone would parse): the full parser reports it.
  for (std::string broken : {R"({"kind": "List", "metadata": tru, "items": [{"a": 1}]})",
                             R"({"kind": "List", "items": [{"a": 1}], "metadata": {"x": 1,}})",
                             R"({"kind": "List", "bad\q": 1, "items": [{"a": 1}]})"}) {
    CAPTURE(broken);
    CHECK_FALSE(ForEachJsonObjectPruned(broken, [](int, PendingObject&&, const std::string&, const std::string&,
                                                   const ObjectText&) {
                  FAIL("nothing may be handed out of a broken document");
                }).has_value());
  }
  // Not a List by its kind: one object. "items" twice: the full parser decides.
  CHECK(HandOut(R"({"kind": "Pod", "items": [1, 2]})").size() == 1);
  CHECK(HandOut(R"({"kind": "List", "items": [1], "items": [2, 3]})").size() >= 1);
  // An empty List has no item to hand out: it comes out whole, so the audit still counts it.
  auto empty = HandOut(R"({"kind": "List", "items": []})");
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].item == -1);
  CHECK((*empty[0].object)["items"] == json::array());
}

TEST_CASE("A List's items come out as each object pruned alone, over the real-world data", "[fast_json][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  std::istringstream none;
  auto result = cli::CollectAudit({test::CorpusPath()}, Policy{}, none);
  json list = {{"kind", "List"}, {"apiVersion", "v1"}, {"items", json::array()}};
  for (const auto& doc : result.documents) {
    if (doc.object && doc.object->is_object()) list["items"].push_back(*doc.object);
  }
  REQUIRE(list["items"].size() >= 100);
  for (int indent : {-1, 2}) {
    auto items = HandOut(list.dump(indent));
    REQUIRE(items.size() == list["items"].size());
    for (size_t i = 0; i < items.size(); ++i) {
      CAPTURE(indent, i);
      REQUIRE(items[i].object.has_value());
      CHECK(*items[i].object == *ParseJsonPruned(list["items"][i].dump()));
    }
  }
}

}  // namespace
}  // namespace shmguard::io
