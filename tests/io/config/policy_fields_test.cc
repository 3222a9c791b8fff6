// FieldReader: a document's fields read strictly, the first error naming the field's key and
// line.
#include "io/config/policy_fields.h"

#include <catch2/catch.hpp>

namespace shmguard::io {
namespace {

// The readers, open to the test.
class Reader : public FieldReader {
 public:
  using FieldReader::Bool;
  using FieldReader::Bytes;
  using FieldReader::Count;
  using FieldReader::Entries;
  using FieldReader::FieldReader;
  using FieldReader::StringList;
  Node At(const std::string& key) const { return Node{doc_.Root().Find(key), "/" + key}; }
  std::string Error() const { return error_ ? error_->ToString() : ""; }
};

TEST_CASE("FieldReader reads counts, sizes, booleans and lists, and names the line of what is wrong",
          "[policy_fields]") {
  auto doc = ParseYamlAsText("count: 3\nbig: 2000\nsize: 1Gi\nflag: true\nnames: [nvidia.com/gpu, \"bad name\"]\n");
  REQUIRE(doc);
  Reader r("policy.yaml", *doc);
  int64_t n = 0;
  CHECK(r.Count(r.At("count"), "count", 1, 10, n));
  CHECK(n == 3);
  int64_t bytes = 0;
  CHECK(r.Bytes(r.At("size"), "size", bytes));
  CHECK(bytes == int64_t{1} << 30);
  bool flag = false;
  CHECK(r.Bool(r.At("flag"), "flag", flag));
  CHECK(flag);
  CHECK(r.Error().empty());

  CHECK_FALSE(r.Count(r.At("big"), "big", 1, 1024, n));
  CHECK_THAT(r.Error(), Catch::Contains("policy.yaml:2"));
  CHECK_THAT(r.Error(), Catch::Contains("big: must be a whole number from 1 to 1024"));

  Reader lists("policy.yaml", *doc);
  std::vector<std::string> names;
  CHECK_FALSE(lists.StringList(lists.At("names"), "names", names, Reader::Entries::kResourceNames));
  CHECK_THAT(lists.Error(), Catch::Contains("policy.yaml:5"));
  CHECK_THAT(lists.Error(), Catch::Contains("bad name"));

  Reader wrong("policy.yaml", *doc);
  CHECK_FALSE(wrong.Bool(wrong.At("count"), "count", flag));
  CHECK_THAT(wrong.Error(), Catch::Contains("policy.yaml:1"));
}

}  // namespace
}  // namespace shmguard::io
