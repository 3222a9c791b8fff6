// JsonPatch: operations written as JSON text that nlohmann reads back and applies as RFC 6902
// says; RFC 6901 escaping of reference tokens.
#include "core/values/json_patch.h"

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("EscapePointerToken escapes ~ then / (RFC 6901 section 3)", "[json_patch]") {
  CHECK(EscapePointerToken("shmguard.io/plan") == "shmguard.io~1plan");
  CHECK(EscapePointerToken("a~b") == "a~0b");
  CHECK(EscapePointerToken("~/") == "~0~1");
  CHECK(EscapePointerToken("") == "");
  // Read back through nlohmann's pointer: the escaped token names the original key.
  json doc = {{"metadata", {{"annotations", {{"shmguard.io/plan", "x"}, {"a~b", "y"}}}}}};
  CHECK(doc.at(json::json_pointer("/metadata/annotations/" + EscapePointerToken("shmguard.io/plan"))) == "x");
  CHECK(doc.at(json::json_pointer("/metadata/annotations/" + EscapePointerToken("a~b"))) == "y");
}

TEST_CASE("JsonPatch text is the operations as nlohmann writes them, and applies", "[json_patch]") {
  JsonPatch p;
  CHECK(p.empty());
  CHECK(p.Text() == "[]");
  p.Add("/spec/volumes", R"([{"emptyDir":{"medium":"Memory"},"name":"dshm"}])");
  p.Replace("/spec/hostIPC", "true");
  p.Add("/metadata/annotations/a\"b", R"("v")");  // a path with a quote is escaped
  CHECK(p.size() == 3);
  CHECK(p.Text() == p.ToJson().dump());  // byte for byte what nlohmann writes
  json pod = {{"metadata", {{"annotations", json::object()}}}, {"spec", {{"hostIPC", false}}}};
  json patched = pod.patch(p.ToJson());
  CHECK(patched["spec"]["volumes"][0]["name"] == "dshm");
  CHECK(patched["spec"]["hostIPC"] == true);
  CHECK(patched["metadata"]["annotations"]["a\"b"] == "v");
}

TEST_CASE("JsonPatch::Extend appends another patch's operations in order", "[json_patch]") {
  JsonPatch a, b, empty;
  a.Add("/x", "1");
  b.Add("/y", "2");
  b.Replace("/x", "3");
  a.Extend(empty);
  CHECK(a.size() == 1);
  a.Extend(b);
  CHECK(a.size() == 3);
  CHECK(json(json::object()).patch(a.ToJson()) == json{{"x", 3}, {"y", 2}});
  JsonPatch c;
  c.Extend(b);
  CHECK(c == b);
}

TEST_CASE("DiffPatch turns one document into the other with the fewest whole values", "[json_patch]") {
  const json pod = json::parse(R"({"metadata":{"annotations":{"shmguard.io/plan":"{\"policyMode\":true}","x":"1"}},
    "spec":{"volumes":[{"name":"data"},{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"6Gi"}}],
            "containers":[{"name":"a","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]}})");
  struct Case {
    const char* name;
    std::function<void(json&)> change;
    const char* ops;
  };
  const std::vector<Case> cases = {
      {"the same document", [](json&) {}, "[]"},
      {"a size", [](json& p) { p["spec"]["volumes"][1]["emptyDir"]["sizeLimit"] = "4270Mi"; },
       R"([{"op":"replace","path":"/spec/volumes/1/emptyDir/sizeLimit","value":"4270Mi"}])"},
      {"an annotation with a slash", [](json& p) { p["metadata"]["annotations"]["shmguard.io/plan"] = "{}"; },
       R"([{"op":"replace","path":"/metadata/annotations/shmguard.io~1plan","value":"{}"}])"},
      {"a member removed and one added",
       [](json& p) {
         p["metadata"]["annotations"].erase("x");
         p["spec"]["hostIPC"] = true;
       },
       R"([{"op":"remove","path":"/metadata/annotations/x"},{"op":"add","path":"/spec/hostIPC","value":true}])"},
      {"an array that changed length", [](json& p) { p["spec"]["volumes"].erase(1); },
       R"([{"op":"replace","path":"/spec/volumes","value":[{"name":"data"}]}])"},
      {"a value of another type", [](json& p) { p["spec"]["containers"][0]["volumeMounts"] = nullptr; },
       R"([{"op":"replace","path":"/spec/containers/0/volumeMounts","value":null}])"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      json to = pod;
      c.change(to);
      JsonPatch patch = DiffPatch(pod, to);
      CHECK(patch.Text() == c.ops);
      CHECK(pod.patch(patch.ToJson()) == to);  // applied, it gives the other
    }
  }
}

}  // namespace
}  // namespace shmguard
