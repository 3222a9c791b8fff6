// ParseManifests: kubectl-style document splitting, per-document errors with lines, JSON.
#include "io/files/manifests.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

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
  auto paths = ExpandPaths({dir.string(), "-", (dir / "nope").string()});
  REQUIRE(paths.size() == 5);
  CHECK(paths[0].path == (dir / "a.yml").string());
  CHECK(paths[1].path == (dir / "b.yaml").string());
  CHECK(paths[2].path == (dir / "sub/c.json").string());
  CHECK(paths[3].path == "-");
  for (int i : {0, 1, 2, 3}) CHECK_FALSE(paths[i].error);
  REQUIRE(paths[4].error);
  CHECK(paths[4].error->code == Code::kIo);
  CHECK_THAT(paths[4].error->ToString(), Catch::Contains("nope: no such file or directory"));
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
    REQUIRE(paths.size() == 1);
    REQUIRE(paths[0].error);
    CHECK(paths[0].error->code == Code::kIo);
    CHECK(paths[0].error->where.file == c.path);
    CHECK_THAT(paths[0].error->message, Catch::Contains("not a regular file or a directory (" + c.what + ")"));
  }
  fs::remove_all(dir);
}

TEST_CASE("ExpandPaths names what a directory holds that cannot be read, and passes nothing over", "[manifests]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "shmguard-expand-lost";
  fs::remove_all(dir);
  fs::create_directories(dir / "locked");
  fs::permissions(dir, fs::perms::all);  // the child below walks it as nobody
  fs::create_directories(dir / "open");
  std::ofstream(dir / "locked" / "pod.yaml") << "kind: Pod\n";
  std::ofstream(dir / "open" / "pod.yaml") << "kind: Pod\n";
  fs::create_symlink(dir / "gone.yaml", dir / "dangling.yaml");
  REQUIRE(::mkfifo((dir / "pipe.yaml").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((dir / "pipe.txt").c_str(), 0600) == 0);  // not named like a manifest: not read
  fs::create_directories(dir / "dir.yaml");                  // a directory named like one: walked
  std::ofstream(dir / "dir.yaml" / "job.yml") << "kind: Job\n";
  fs::permissions(dir / "locked", fs::perms::none);
  // As a user without the DAC override root has, for whom the locked directory is locked: run
  // in a child as nobody (65534) when the tests run as root.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(2);
    std::string out;
    for (const auto& p : ExpandPaths({dir.string()})) out += p.path + "\t" + (p.error ? p.error->message : "") + "\n";
    const bool written = ::write(pipe_fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string listing;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) listing.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  fs::permissions(dir / "locked", fs::perms::owner_all);
  std::vector<InputFile> paths;
  for (size_t pos = 0, eol; (eol = listing.find('\n', pos)) != std::string::npos; pos = eol + 1) {
    std::string line = listing.substr(pos, eol - pos);
    size_t tab = line.find('\t');
    std::string error = line.substr(tab + 1);
    paths.push_back(
        {line.substr(0, tab), error.empty() ? std::nullopt : std::optional<Error>(MakeError(Code::kIo, error))});
  }
  std::map<std::string, std::string> got;  // path -> error ("" read)
  for (const auto& p : paths) got[fs::path(p.path).lexically_relative(dir).string()] = p.error ? p.error->message : "";
  CHECK(got["open/pod.yaml"] == "");
  CHECK(got["dir.yaml/job.yml"] == "");
  CHECK(got["dangling.yaml"] == "a symbolic link to nothing");
  CHECK(got["pipe.yaml"] == "not a regular file or a directory (a FIFO)");
  CHECK_FALSE(got.count("pipe.txt"));
  CHECK_THAT(got["locked"], Catch::StartsWith("cannot read the directory: Permission denied"));
  CHECK_FALSE(got.count("locked/pod.yaml"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shmguard::io
