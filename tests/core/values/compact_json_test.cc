// CompactJson: byte for byte what nlohmann's dump gives, on edge cases and on all test data.
#include "core/values/compact_json.h"

#include <catch2/catch.hpp>
#include <limits>
#include <sstream>

#include "core/verdict/evaluation.h"
#include "io/files/manifests.h"
#include "test_documents.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

std::string Dumped(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

TEST_CASE("CompactJson and JsonQuoted write what dump writes for every kind of value", "[compact_json]") {
  const json cases[] = {
      json::object(),
      json::array(),
      nullptr,
      true,
      false,
      0,
      -1,
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<uint64_t>::max(),
      1.5,
      -0.0,
      0.1,
      1e300,
      3.0,
      "",
      "plain",
      "say \"hi\"",
      "back\\slash",
      "/a/b~1c",
      "{\"x\":1}",
      "tab\there",
      "new\nline",
      std::string("nul\0byte", 8),
      "\x01\x1f",
      "del\x7f",
      "caf\xc3\xa9",
      "\xf0\x9f\x9a\x80",
      "bad \xff byte",
      "cut \xe2\x82",
      json::array({1, "two", nullptr, json::object({{"k", "v"}})}),
      json::object({{"b", 1}, {"a", json::array({})}, {"\xff key", "x"}, {"quo\"te", "y"}}),
  };
  for (const auto& v : cases) {
    CAPTURE(Dumped(v));
    CHECK(CompactJson(v) == Dumped(v));
    if (v.is_string()) CHECK(JsonQuoted(v.get<std::string>()) == Dumped(v));
  }
}

// JsonQuoted copies eight plain bytes at a time: every byte value, at every offset in a word
// and around word boundaries, is still escaped or handed to dump as dump would have it.
TEST_CASE("JsonQuoted finds a byte to escape wherever it lies in a word", "[compact_json]") {
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t length : {1, 7, 8, 9, 16, 17, 31}) {
      for (size_t at = 0; at < length; ++at) {
        std::string s(length, 'a');
        s[at] = static_cast<char>(byte);
        CAPTURE(byte, length, at);
        REQUIRE(JsonQuoted(s) == Dumped(s));
      }
    }
  }
}

TEST_CASE("CompactJson and JsonPatch write what dump writes over all test data and its patches",
          "[compact_json][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  const auto documents = test::ReadDocuments({test::CorpusPath(), std::string(SOURCE_DIR) + "/examples"});
  int compared = 0;
  for (const auto& doc : documents) {
    if (!doc.object) continue;
    CAPTURE(doc.file, doc.index);
    const json object = doc.object->ToJson();
    CHECK(CompactJson(object) == Dumped(object));
    ++compared;
  }
  int patches = 0;
  for (const auto& doc : documents) {  // a JsonPatch's text is what its tree dumps as
    if (!doc.object || !doc.object->Root().IsObject()) continue;
    const json written = doc.object->ToJson();
    json annotated = written;
    annotated["metadata"]["annotations"]["shmguard.io/num-workers"] = "4";
    annotated["metadata"]["annotations"]["shmguard.io/batch-bytes"] = "16Mi";
    for (const json* object : {&written, static_cast<const json*>(&annotated)}) {
      Evaluation ev = Evaluate(*object, Policy{}, {.namespace_name = "ml-a"});
      CAPTURE(doc.file, doc.index, ev.patch.Text());
      CHECK(ev.patch.Text() == Dumped(ev.patch.ToJson()));
      patches += !ev.patch.empty();
    }
  }
  CHECK(compared >= 100);
  CHECK(patches >= 40);
}

}  // namespace
}  // namespace shmguard
