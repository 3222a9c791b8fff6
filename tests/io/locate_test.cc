// LocatePointers: where a JSON pointer lands in YAML block and flow style and in JSON, and the
// nearest written parent of a missing field.
#include "io/locate.h"

#include <catch2/catch.hpp>

namespace shmguard::io {
namespace {

const char* kPod = R"(# a comment line
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    shmguard.io/num-workers: "8"
spec:
  containers:
  - name: t
    resources:
      limits: {nvidia.com/gpu: 4, memory: 64Gi}
  - {name: u, image: x}
)";

TEST_CASE("LocatePointers finds members at their keys and items at their first character", "[locate]") {
  struct Case {
    const char* pointer;
    int line, column;
  };
  const Case cases[] = {
      {"", 2, 1},                                                      // the document: its first node
      {"/kind", 3, 1},                                                 // a member: its key
      {"/metadata/annotations/shmguard.io~1num-workers", 7, 5},        // an escaped "/"
      {"/spec/containers/0", 10, 5},                                   // an item: its first character
      {"/spec/containers/0/resources/limits/memory", 12, 35},          // in flow style
      {"/spec/containers/1/image", 13, 15},                            // a flow mapping's member
      {"/spec/containers/0/securityContext/capabilities/add", 10, 5},  // missing: the nearest written parent
      {"/spec/hostIPC", 8, 1},
      {"/spec/containers/7", 9, 3},
      {"/nothing/at/all", 2, 1},
  };
  std::vector<std::string> pointers;
  for (const auto& c : cases) pointers.emplace_back(c.pointer);
  auto positions = LocatePointers(kPod, pointers);
  REQUIRE(positions.size() == pointers.size());
  for (size_t i = 0; i < pointers.size(); ++i) {
    CAPTURE(pointers[i]);
    CHECK(positions[i].line == cases[i].line);
    CHECK(positions[i].column == cases[i].column);
  }
}

TEST_CASE("LocatePointers reads JSON and offsets positions to where the text starts in its file", "[locate]") {
  // A List item handed out alone: its text starts on line 3, column 5 of the file.
  const std::string item = "{\"metadata\": {\"name\": \"a\"},\n    \"spec\": {\"containers\": [{\"name\": \"c\"}]}}";
  auto positions = LocatePointers(item, {"/metadata/name", "/spec/containers/0/name", "/spec/volumes"}, 3, 5);
  REQUIRE(positions.size() == 3);
  CHECK(positions[0].line == 3);
  CHECK(positions[0].column == 5 + 14);  // the first line is shifted by the item's column
  CHECK(positions[1].line == 4);
  CHECK(positions[1].column == 30);  // later lines are the file's own columns
  CHECK(positions[2].line == 4);     // missing: /spec, at its key
  CHECK(positions[2].column == 5);
}

TEST_CASE("LocatePointers reads the first document only and gives 0 where the text does not parse", "[locate]") {
  auto two = LocatePointers("a: 1\n---\nb: 2\n", {"/a", "/b"});
  CHECK(two[0].line == 1);
  CHECK(two[1].line == 1);  // not in the first document: the document itself
  auto broken = LocatePointers("kind: [\n", {"/kind"});
  CHECK(broken[0].line == 1);  // the events before the error still count
  auto nothing = LocatePointers("", {"/kind"});
  CHECK(nothing[0].line == 0);
  CHECK(nothing[0].column == 0);
}

}  // namespace
}  // namespace shmguard::io
