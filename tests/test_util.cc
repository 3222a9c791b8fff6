// Implementation of the shared test helpers.
#include "test_util.h"

#include <catch2/catch.hpp>

#include "io/manifests.h"

namespace shmguard::test {

std::string TestdataPath(const std::string& relative) {
  return std::string(TESTDATA_DIR) + "/" + relative;
}

std::string ReadTestdata(const std::string& relative) {
  auto text = io::ReadFileText(TestdataPath(relative));
  REQUIRE(text.has_value());
  return *text;
}

nlohmann::json Yaml(const std::string& text) {
  auto docs = io::ParseManifests(text, "inline.yaml");
  REQUIRE(docs.size() == 1);
  INFO((docs[0].error ? docs[0].error->ToString() : ""));
  REQUIRE(docs[0].object.has_value());
  return *docs[0].object;
}

}  // namespace shmguard::test
