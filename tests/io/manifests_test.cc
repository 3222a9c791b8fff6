// ParseManifests: kubectl-style document splitting, per-document errors with lines, JSON.
#include "io/manifests.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace shmguard::io {
namespace {

TEST_CASE("ParseManifests splits documents and keeps going past a broken one", "[manifests]") {
  const char* text =
      "# leading comment\n"
      "---\n"
      "kind: A\n"
      "---\n"
      "# only a comment\n"
      "--- # separator with a comment\n"
      "kind: B\n"
      "  bad: indentation\n"
      "---\n"
      "kind: C\n"
      "...\n";
  auto docs = ParseManifests(text, "f.yaml");
  REQUIRE(docs.size() == 3);
  CHECK(docs[0].object->Root().StringMember("kind") == "A");
  CHECK(docs[0].line == 2);
  REQUIRE(docs[1].error.has_value());
  CHECK(docs[1].index == 1);
  CHECK(docs[1].error->where.file == "f.yaml");
  CHECK(docs[1].error->where.line == 8);
  CHECK(docs[2].object->Root().StringMember("kind") == "C");
  CHECK(docs[2].index == 2);
  CHECK(docs[2].line == 9);
}

TEST_CASE("ParseManifests reads JSON and reports the line of a JSON error", "[manifests]") {
  auto ok = ParseManifests("{\"kind\": \"List\", \"items\": []}", "-");
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].is_json);
  CHECK(ok[0].object->Root().StringMember("kind") == "List");
  auto bad = ParseManifests("{\n\"kind\": \"Pod\",\n\"spec\": {,}\n}", "x.json");
  REQUIRE(bad.size() == 1);
  REQUIRE(bad[0].error.has_value());
  CHECK(bad[0].error->where.file == "x.json");
  CHECK(bad[0].error->where.line == 3);
}

TEST_CASE("ParseManifests reports unrendered Helm templates with file and line", "[manifests]") {
  // A chart template as charts keep it: Go template actions where YAML expects a mapping.
  const std::string file = "templates/runtime.yaml";
  const std::string text = R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-distributed
  labels:
    {{- include "trainer.labels" . | nindent 4 }}
spec:
  mlPolicy: {numNodes: 1}
)";
  auto docs = ParseManifests(text, file);
  REQUIRE_FALSE(docs.empty());
  bool any_error = false;
  for (const auto& d : docs) {
    if (d.error) {
      any_error = true;
      CHECK(d.error->where.file == "templates/runtime.yaml");
      CHECK(d.error->where.line > 0);
    }
  }
  CHECK(any_error);
}

TEST_CASE("ExpandPaths walks directories in order and names missing paths", "[manifests]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "shmguard-expand-test";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  for (const char* f : {"b.yaml", "a.yml", "sub/c.json", "notes.txt"}) std::ofstream(dir / f) << "x: 1\n";
  auto paths = ExpandPaths({dir.string(), "-"});
  REQUIRE(paths.has_value());
  REQUIRE(paths->size() == 4);
  CHECK((*paths)[0] == (dir / "a.yml").string());
  CHECK((*paths)[1] == (dir / "b.yaml").string());
  CHECK((*paths)[2] == (dir / "sub/c.json").string());
  CHECK((*paths)[3] == "-");
  auto missing = ExpandPaths({(dir / "nope").string()});
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == Code::kIo);
  CHECK_THAT(missing.error().ToString(), Catch::Contains("nope: no such file or directory"));
  fs::remove_all(dir);
}

TEST_CASE("ExpandPaths refuses what is neither a regular file nor a directory, naming what it is", "[manifests]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "shmguard-expand-special";
  fs::remove_all(dir);
  fs::create_directories(dir);
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  struct Case {
    std::string path, what;
  };
  const Case cases[] = {
      {"/dev/zero", "a character device"},
      {(dir / "fifo").string(), "a FIFO"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.path);
    auto paths = ExpandPaths({c.path});
    REQUIRE_FALSE(paths.has_value());
    CHECK(paths.error().code == Code::kIo);
    CHECK(paths.error().where.file == c.path);
    CHECK_THAT(paths.error().message, Catch::Contains("not a regular file or a directory (" + c.what + ")"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shmguard::io
