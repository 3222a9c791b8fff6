// RunAudit over inputs built to break it: a List broken outside its items, documents of every
// shape in every format, a directory it cannot read, file names that are not UTF-8, the inputs
// the audit fuzzer found, a List item nested too deep. Nothing is lost: each is reported and the
// rest audited.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands/audit_command.h"
#include "cli/commands/audit_run.h"
#include "io/words/printable.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::cli {
namespace {

using audit_test::Audit;
using audit_test::Run;
using nlohmann::json;

// -o table reads a List's items one by one: what lies around them must still
// be valid JSON, so that -o table reports the same error as the formats that parse it whole.
TEST_CASE("RunAudit reports a List that is broken outside its items in every format", "[audit_command]") {
  std::string list = R"({"apiVersion": "v1", "kind": "List", "metadata": tru, "items": [)"
                     R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": []}}]})";
  for (const char* format : {"json", "yaml", "table", "patched"}) {
    CAPTURE(format);
    Run r = Audit({"-"}, format, "deny", list);
    CHECK(r.code == ExitCode::kUsage);
    CHECK_THAT(r.err, Catch::Contains("-:1: not valid JSON"));
  }
}

// What kubectl, kustomize or Argo CD would read (or refuse) is never left out in silence: a
// document written on its separator line, a file with CR line endings, a List with a trailing
// comma or a null item get the same verdict whatever the output format.
TEST_CASE("RunAudit reads or reports every document, whatever the format", "[audit_command]") {
  const std::string pod =
      "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: t, resources: "
      "{limits: {nvidia.com/gpu: 1, memory: 8Gi}}}]}}";
  struct Case {
    const char* name;
    std::string text;
    int records, errors;
  };
  const Case cases[] = {
      {"a document on its separator line", "--- " + pod + "\n", 1, 0},
      {"two, the second on its separator line", "kind: ConfigMap\napiVersion: v1\n--- " + pod + "\n", 2, 0},
      {"CR line endings after a comment",
       "# pods\r---\rapiVersion: v1\rkind: Pod\rmetadata: {name: p}\rspec:\r"
       "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1}}}]\r",
       1, 0},
      {"CR line endings, two documents", "---\r" + pod + "\r---\r" + pod + "\r", 2, 0},
      {"a List's trailing comma",
       R"({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap"},]})", 1, 1},
      {"a List's null item",
       R"({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap"}, null]})", 2, 1},
  };
  for (const auto& c : cases) {
    for (const char* format : {"json", "table"}) {
      CAPTURE(c.name, format);
      Run r = Audit({"-"}, format, "deny", c.text);
      if (std::string(format) == "json") {
        json j = json::parse(r.out);
        CHECK(j["summary"]["error"] == c.errors);
        CHECK(j["records"].size() == static_cast<size_t>(c.records));
      } else {
        CHECK(r.code == (c.errors ? ExitCode::kUsage : ExitCode::kOk));
        if (!c.errors) CHECK_THAT(r.out, !Catch::Contains("0 objects"));
      }
    }
    // -o patched prints every document it read, patched or as it was.
    if (!c.errors) {
      Run patched = Audit({"-"}, "patched", "deny", c.text);
      CHECK(patched.code == ExitCode::kOk);
      CHECK_THAT(patched.out, Catch::Contains("kind: Pod"));
      CHECK_THAT(patched.out, Catch::Contains("dshm"));
    }
  }
}

// A directory that cannot be read, a dangling link or a FIFO named like a manifest is an error
// of the audit (exit 2) naming it; the readable files beside it are audited.
TEST_CASE("RunAudit names what a directory holds that it cannot read", "[audit_command]") {
  test::TempDir dir;
  std::ofstream(dir.File("pod.yaml")) << test::ReadTestdata("../../examples/pod-needs-patch.yaml");
  std::filesystem::create_symlink(dir.File("gone.yaml"), dir.File("dangling.yaml"));
  REQUIRE(::mkfifo(dir.File("pipe.yml").c_str(), 0600) == 0);
  Run r = Audit({dir.path()}, "json", "deny");
  CHECK(r.code == ExitCode::kUsage);
  json j = json::parse(r.out);
  CHECK(j["summary"]["patch"] == 1);
  CHECK(j["summary"]["error"] == 2);
  CHECK_THAT(r.err, Catch::Contains(dir.File("dangling.yaml") + ": a symbolic link to nothing"));
  CHECK_THAT(r.err, Catch::Contains(dir.File("pipe.yml") + ": not a regular file or a directory (a FIFO)"));
}

// A path need not be UTF-8; every output that must be (YAML, JSON, XML) still is, and says it.
TEST_CASE("RunAudit writes every format for a file whose name is not UTF-8", "[audit_command]") {
  test::TempDir dir;
  const std::string name = dir.File("a\xff.yaml");
  std::ofstream(name) << test::ReadTestdata("../../examples/pod-needs-patch.yaml");
  for (const char* format : {"yaml", "json", "junit", "sarif", "table", "github", "policyreport"}) {
    CAPTURE(format);
    Run r = Audit({dir.path()}, format, "deny");
    CHECK(r.code == ExitCode::kOk);
    CHECK_FALSE(r.out.empty());
    CHECK(io::ValidUtf8(r.out) == r.out);
  }
  json yaml = test::Yaml(Audit({dir.path()}, "yaml", "deny").out);
  CHECK(yaml["records"][0]["file"] == dir.File("a\xEF\xBF\xBD.yaml"));
  CHECK(yaml["records"][0]["verdict"] == "patch");
}

// Inputs that crashed fuzz/audit_fuzz: every output format must still be produced, and JSON
// output must be valid JSON even when the input (or a parser's message about it) is not UTF-8.
TEST_CASE("RunAudit survives the inputs the audit fuzzer found", "[audit_command]") {
  for (const char* file :
       {"fuzz-regressions/audit-invalid-utf8.yaml", "fuzz-regressions/audit-invalid-utf8-in-error.yaml",
        "fuzz-regressions/audit-recursive-alias.yaml"}) {
    for (const char* format : {"json", "yaml", "table", "patched"}) {
      CAPTURE(file, format);
      Run r = Audit({test::TestdataPath(file)}, format);
      CHECK(r.code == ExitCode::kUsage);  // unreadable documents are reported, not fatal
      CHECK_THAT(r.err, Catch::Contains("invalid UTF-8") || Catch::Contains("inside its own anchor"));
      if (std::string(format) == "json") CHECK_NOTHROW(json::parse(r.out));
    }
  }
}

}  // namespace
}  // namespace shmguard::cli

namespace shmguard::cli {
namespace {

using nlohmann::json;

TEST_CASE("RunAudit reports a List item nested too deep and audits the other items", "[audit_command]") {
  std::string deep = std::string(200, '[') + std::string(200, ']');
  std::string list =
      R"({"kind": "List", "apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}, )" +
      deep + R"(, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": []}}]})";
  for (int jobs : {1, 2}) {
    CAPTURE(jobs);
    std::istringstream in(list);
    std::ostringstream out, err;
    AuditOptions o{{"-"}, AuditFormat::kJson, Severity::kError, jobs};
    CHECK(RunAudit(o, Policy{}, in, out, err) == ExitCode::kUsage);
    CHECK_THAT(err.str(), Catch::Contains("nested deeper than 128"));
    json j = json::parse(out.str());
    REQUIRE(j["records"].size() == 3);
    CHECK(j["records"][0]["name"] == "a");
    CHECK(j["records"][1]["verdict"] == "error");
    CHECK(j["records"][2]["name"] == "b");
  }
}

}  // namespace
}  // namespace shmguard::cli
