// ParseJsonView / ParseJson: every kind of value, positions, errors, and — over all test data —
// that a tape (read in place, from JSON or from YAML) and nlohmann's tree give the same Evaluation.
#include "io/formats/fast_json.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "core/verdict/evaluation.h"
#include "io/files/manifests.h"
#include "io/formats/yaml_emit.h"
#include "io/formats/yaml_json.h"
#include "test_documents.h"
#include "test_util.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

std::vector<JsonNode> ItemsOf(JsonNode list) {
  std::vector<JsonNode> out;
  for (JsonNode item : list.Items()) out.push_back(item);
  return out;
}

TEST_CASE("ParseJson locates every value and key, in characters, from where its text starts", "[fast_json]") {
  // A List item handed out alone: its text starts on line 3, column 5 of its file.
  const std::string item =
      "{\"metadata\": {\"name\": \"\u00e9t\u00e9\", \"x\": 1.5},\n    \"spec\": {\"containers\": [{\"name\": \"c\"}, "
      "7, null]}}";
  auto t = ParseJson(item, {3, 5});
  REQUIRE(t.has_value());
  CHECK(t->Root().Find("metadata").StringMember("name") == "\u00e9t\u00e9");
  struct Case {
    const char* pointer;
    int line, column;
  };
  const Case cases[] = {
      {"", 3, 5},                          // the object's first character
      {"/metadata", 3, 6},                 // a member: its key's opening quote
      {"/metadata/x", 3, 4 + 30},          // after a string of two-byte characters, counted once each
      {"/spec/containers/0/name", 4, 30},  // later lines are the file's own columns
      {"/spec/containers/2", 4, 47},
      {"/spec/volumes", 4, 5},        // missing: /spec, at its key
      {"/spec/containers/9", 4, 14},  // missing: the list, at its key
  };
  for (const auto& c : cases) {
    CAPTURE(c.pointer);
    const TextPosition at = t->Locate(c.pointer);
    CHECK(at.line == c.line);
    CHECK(at.column == c.column);
  }
}

TEST_CASE("ParseJson, ParseYaml and nlohmann read a document to the same values", "[fast_json]") {
  const json doc = json::parse(R"({"s":"a\"b","i":-3,"u":18446744073709551615,"d":1.5,"t":true,"f":false,
    "n":null,"l":[1,"x",{"k":"v"},[]],"o":{"z":1,"a":2}})");
  auto from_json = ParseJson(doc.dump(2));
  REQUIRE(from_json.has_value());
  CHECK(from_json->ToJson() == doc);
  auto from_yaml = ParseYaml(JsonToYaml(doc));
  REQUIRE(from_yaml.has_value());
  CHECK(from_yaml->ToJson() == doc);
  const Tape copy = *from_json;  // copies share the document
  CHECK(copy.Root().Find("l").Dump() == R"([1,"x",{"k":"v"},[]])");
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
  int dups = 0;
  for (const auto& [key, value] : root->Members()) {
    if (key != "dup") continue;
    ++dups;
    CHECK(value.Integer() == 2);  // listed once, with the value Find reads
  }
  CHECK(dups == 1);
  std::vector<JsonNode> items = ItemsOf(root->Find("l"));
  REQUIRE(items.size() == 3);
  CHECK(items[1].Is("x"));
  CHECK(items[2].StringMember("k") == "v");
  CHECK(root->Find("l").Dump() == R"([1,"x",{"k":"v"}])");
  auto members = root->Find("o").Members();
  REQUIRE(members.size() == 2);
  CHECK(members[0].first == "a");  // by key, whatever the document's order
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
  auto tape = ParseJson(text);
  REQUIRE(tape.has_value());
  for (JsonNode n : {*view, tree, tape->Root()}) {
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

TEST_CASE("ParseJson rejects invalid and too deeply nested JSON, naming the line where it can", "[fast_json]") {
  for (std::string bad : {std::string("{"), std::string("{\"a\":}"), std::string("[1,]"), std::string("{} {}"),
                          std::string("\"\\ud800\""), std::string("nul"), std::string("")}) {
    CAPTURE(bad);
    auto r = ParseJson(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("not valid JSON"));
  }
  for (int depth : {129, 1000, 100000}) {
    CAPTURE(depth);
    auto r = ParseJson(std::string(depth, '[') + std::string(depth, ']'));
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("nested deeper than 128"));
  }
  CHECK(ParseJson(std::string(100, '[') + std::string(100, ']')).has_value());
  auto at = ParseJson("{\n\"kind\": \"Pod\",\n\"spec\": {,}\n}", {10, 1});  // libyaml finds the line
  REQUIRE_FALSE(at.has_value());
  CHECK(at.error().where.line == 12);
  auto first = ParseJson("{\"a\": 1,}", {7, 3});  // valid YAML flow style: the text's first line
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().where.line == 7);
  for (int depth : {129, 100000}) {
    CAPTURE(depth);
    auto r = ParseJsonView(std::string(depth, '[') + std::string(depth, ']'));
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("nested deeper than 128"));
  }
  CHECK(ParseJsonView(std::string(128, '[') + std::string(128, ']')).has_value());
  CHECK_THAT(ParseJsonView("{\"a\":}").error().message, Catch::Contains("not valid JSON"));
}

void CheckSameEvaluation(const json& full, JsonNode other, const std::string& what) {
  Evaluation a = Evaluate(full, Policy{}, {.namespace_name = "team-a"});
  Evaluation b = Evaluate(other, Policy{}, {.namespace_name = "team-a"});
  CAPTURE(what);
  CHECK(a.verdict == b.verdict);
  CHECK(a.AllFindings() == b.AllFindings());
  CHECK(a.patch == b.patch);
  if (!a.patch.empty()) CHECK(full.patch(a.patch.ToJson()).is_object());  // and it applies to the object
}

// The view of the JSON text, and the tapes from the JSON text and from the YAML text.
void CheckSameEvaluation(const json& full, const std::string& what) {
  std::string text = full.dump();
  auto view = ParseJsonView(text);
  REQUIRE(view.has_value());
  CheckSameEvaluation(full, *view, what + " (view)");
  auto from_json = ParseJson(text);
  REQUIRE(from_json.has_value());
  CheckSameEvaluation(full, from_json->Root(), what + " (JSON)");
  auto from_yaml = ParseYaml(JsonToYaml(full));
  REQUIRE(from_yaml.has_value());
  CheckSameEvaluation(full, from_yaml->Root(), what + " (YAML)");
}

TEST_CASE("A tape and nlohmann's tree give the same Evaluation over the real-world data", "[fast_json][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  int compared = 0;
  for (const auto& doc : test::ReadDocuments({test::CorpusPath(), std::string(SOURCE_DIR) + "/examples"})) {
    if (!doc.object || !doc.object->Root().IsObject()) continue;
    const json full = doc.object->ToJson();
    CheckSameEvaluation(full, doc.object->Root(), doc.file + " as written");
    CheckSameEvaluation(full, doc.file + ":" + std::to_string(doc.index));
    json annotated = full;
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

// The documents ForEachManifest hands out of a JSON text, item by item, each parsed.
std::vector<Document> HandOut(const std::string& text) {
  std::vector<Document> out;
  ForEachManifest(text, "list.json", JsonLists::kItemByItem, [&](Document&& d) {
    ParseDocument(d);
    out.push_back(std::move(d));
  });
  return out;
}

TEST_CASE("A JSON List's items are found in the text and parsed alone, whatever is inside them", "[fast_json]") {
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
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(items[i].item == static_cast<int>(i));
    CHECK(items[i].list_kind == "PodList");
    CHECK(items[i].list_api_version == "v1");
  }
  auto value = [&](size_t i) {
    REQUIRE(items[i].object.has_value());
    return items[i].object->ToJson();
  };
  CHECK(value(0)["metadata"]["name"] == "a]}\"[{");
  CHECK(value(0)["metadata"]["annotations"] == json({{"shmguard.io/num-workers", "8"}}));
  CHECK(value(1)["metadata"]["name"] == "b\\");
  CHECK(value(1)["spec"]["containers"][0]["args"][0] == "--x=[1,2]");
  CHECK(value(2) == 7);
  CHECK(value(3) == "text");
  CHECK(value(4).is_null());
  CHECK(value(5) == json::parse("[1, [2]]"));
  REQUIRE(items[6].error.has_value());  // fails alone, naming its line
  CHECK(items[6].error->where.line == 5);
  CHECK(items[6].error->where.file == "list.json");
  CHECK(value(7)["metadata"]["name"] == "last");
  // Each item is located in the file: its first character, then its members.
  CHECK(items[0].object->Locate("").line == 2);
  CHECK(items[0].object->Locate("").column == 5);
  CHECK(items[0].object->Locate("/spec").column == 88);
  CHECK(items[6].object_text == R"({"metadata": {"name": "bad"}, "spec": tru})");
  CHECK(items[7].object->Locate("/metadata/name").line == 6);
  CHECK(items[7].object->Locate("/metadata/name").column == 19);
}

TEST_CASE("A broken or unusual JSON List is parsed whole", "[fast_json]") {
  auto truncated = HandOut(R"({"kind": "List", "items": [{"a": 1}, {"b": )");
  REQUIRE(truncated.size() == 1);
  CHECK_FALSE(truncated[0].item.has_value());
  CHECK(truncated[0].error.has_value());
  // Invalid JSON outside the items (the items alone would parse): the whole document fails.
  for (std::string broken : {R"({"kind": "List", "metadata": tru, "items": [{"a": 1}]})",
                             R"({"kind": "List", "items": [{"a": 1}], "metadata": {"x": 1,}})",
                             R"({"kind": "List", "bad\q": 1, "items": [{"a": 1}]})"}) {
    CAPTURE(broken);
    auto docs = HandOut(broken);
    REQUIRE(docs.size() == 1);
    CHECK(docs[0].error.has_value());
  }
  // Not a List by its kind: one object. "items" twice: parsed whole.
  CHECK(HandOut(R"({"kind": "Pod", "items": [1, 2]})").size() == 1);
  CHECK(HandOut(R"({"kind": "List", "items": [1], "items": [2, 3]})").size() >= 1);
  // An empty List has no item to hand out: it comes out whole, so the audit still counts it.
  auto empty = HandOut(R"({"kind": "List", "items": []})");
  REQUIRE(empty.size() == 1);
  CHECK_FALSE(empty[0].item.has_value());
  CHECK(empty[0].object->ToJson()["items"] == json::array());
}

TEST_CASE("A List's items come out as each object parsed alone, over the real-world data", "[fast_json][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  json list = {{"kind", "List"}, {"apiVersion", "v1"}, {"items", json::array()}};
  for (const auto& doc : test::ReadDocuments({test::CorpusPath()})) {
    if (doc.object && doc.object->Root().IsObject()) list["items"].push_back(doc.object->ToJson());
  }
  REQUIRE(list["items"].size() >= 100);
  for (int indent : {-1, 2}) {
    const std::string text = list.dump(indent);
    auto items = HandOut(text);
    REQUIRE(items.size() == list["items"].size());
    auto whole = ParseJson(text);
    REQUIRE(whole.has_value());
    for (size_t i = 0; i < items.size(); ++i) {
      CAPTURE(indent, i);
      REQUIRE(items[i].object.has_value());
      CHECK(items[i].object->ToJson() == list["items"][i]);
      // Located alone as in the whole document.
      const std::string at = "/items/" + std::to_string(i);
      CHECK(items[i].object->Locate("/metadata").line == whole->Locate(at + "/metadata").line);
      CHECK(items[i].object->Locate("/metadata").column == whole->Locate(at + "/metadata").column);
    }
  }
}

}  // namespace
}  // namespace shmguard::io
