// JsonPatch: operations written as JSON text that nlohmann reads back and applies as RFC 6902
// says; RFC 6901 escaping of reference tokens.
#include "shmguard/json_patch.h"

#include <catch2/catch.hpp>

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

}  // namespace
}  // namespace shmguard
