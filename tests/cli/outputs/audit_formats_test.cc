// The audit's tool formats — SARIF, JUnit, GitHub workflow commands, policy reports — over
// examples/: each says what the JSON output says, at the same lines. Their schemas and the
// tools' own validators are the end-to-end suite's (e2e/audit_formats_test.go: the SARIF SDK's
// validator, the API server with the policy-report CRDs).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/commands/audit_command.h"
#include "test_util.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::cli {
namespace {

using nlohmann::json;

struct Out {
  std::string text;
  ExitCode code;
};

// `shmguard audit -o FORMAT PATHS` from the repository's root.
Out Audit(const std::string& format, std::vector<std::string> paths, Severity fail_on = Severity::kError,
          std::vector<Check> ignore = {}, ReportApi api = ReportApi::kWgPolicy, std::string docs_url = "") {
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(SOURCE_DIR);
  std::istringstream in;
  std::ostringstream out, err;
  AuditOptions o;
  o.paths = std::move(paths);
  o.output = *ParseAuditFormat(format);
  o.fail_on = fail_on;
  o.jobs = 1;
  o.ignore.checks = std::move(ignore);
  o.report_api = api;
  o.docs_url = std::move(docs_url);
  ExitCode code = RunAudit(o, Policy{}, in, out, err);
  std::filesystem::current_path(was);
  return {out.str(), code};
}

// Every finding of the JSON output as "file:line:column id", in order.
std::vector<std::string> JsonFindings(const std::vector<std::string>& paths, bool with_info) {
  std::vector<std::string> out;
  const json audit = json::parse(Audit("json", paths).text);
  for (const auto& r : audit["records"]) {
    for (const auto& f : r["findings"]) {
      if (!with_info && f["severity"] == "info") continue;
      if (!with_info && f["suppressed"].get<bool>()) continue;
      out.push_back(r["file"].get<std::string>() + ":" + f["line"].dump() + ":" + f["column"].dump() + " " +
                    f["id"].get<std::string>());
    }
  }
  return out;
}

TEST_CASE("audit -o sarif: the catalogue as rules, every finding as a result at its line", "[audit_formats]") {
  json sarif = json::parse(Audit("sarif", {"examples"}).text);
  CHECK(sarif["version"] == "2.1.0");
  REQUIRE(sarif["runs"].size() == 1);
  const json& run = sarif["runs"][0];
  const json& rules = run["tool"]["driver"]["rules"];
  REQUIRE(rules.size() == Catalogue().size());
  for (size_t i = 0; i < rules.size(); ++i) {
    CHECK(rules[i]["id"] == Catalogue()[i].id);
    CHECK(rules[i]["defaultConfiguration"]["level"] ==
          (Catalogue()[i].severity == Severity::kInfo ? "note" : SeverityName(Catalogue()[i].severity)));
  }
  std::vector<std::string> results;
  for (const auto& r : run["results"]) {
    CHECK(rules[r["ruleIndex"].get<size_t>()]["id"] == r["ruleId"]);
    const json& loc = r["locations"][0]["physicalLocation"];
    CHECK(loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%");  // relative paths stay relative
    results.push_back(loc["artifactLocation"]["uri"].get<std::string>() + ":" + loc["region"]["startLine"].dump() +
                      ":" + loc["region"]["startColumn"].dump() + " " + r["ruleId"].get<std::string>());
    CHECK_FALSE(r["partialFingerprints"]["shmguardFinding/v1"].get<std::string>().empty());
  }
  CHECK(results == JsonFindings({"examples"}, true));

  // An absolute path is a file: URI; an exempted finding a result with a suppression.
  const std::string denied = std::string(SOURCE_DIR) + "/examples/pod-denied.yaml";
  json exempted = json::parse(Audit("sarif", {denied}, Severity::kError, {Check::kShmOverMemoryLimit}).text);
  int suppressed = 0;
  for (const auto& r : exempted["runs"][0]["results"]) {
    CHECK(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file://" + denied);
    CHECK_FALSE(r["locations"][0]["physicalLocation"]["artifactLocation"].contains("uriBaseId"));
    if (r.contains("suppressions")) {
      CHECK(r["ruleId"] == "shm-over-memory-limit");
      ++suppressed;
    }
  }
  CHECK(suppressed == 1);
}

// Without --docs-url no rule links anywhere (shmguard knows no address of its docs); with it,
// every rule links to its check's section.
TEST_CASE("audit -o sarif --docs-url: each rule's helpUri is its section of docs/checks.md", "[audit_formats]") {
  const json plain = json::parse(Audit("sarif", {"examples/pod-denied.yaml"}).text)["runs"][0]["tool"]["driver"];
  CHECK_FALSE(plain.contains("informationUri"));
  for (const auto& rule : plain["rules"]) CHECK_FALSE(rule.contains("helpUri"));
  const std::string url = "https://github.com/example/shmguard/blob/v1.0.0/docs/checks.md";
  const json linked =
      json::parse(Audit("sarif", {"examples/pod-denied.yaml"}, Severity::kError, {}, ReportApi::kWgPolicy, url)
                      .text)["runs"][0]["tool"]["driver"];
  CHECK(linked["informationUri"] == url);
  REQUIRE(linked["rules"].size() == Catalogue().size());
  for (size_t i = 0; i < Catalogue().size(); ++i) {
    CHECK(linked["rules"][i]["helpUri"] == url + "#" + std::string(Catalogue()[i].id));
  }
}

TEST_CASE("audit -o github: a workflow command per warning and error, at its line", "[audit_formats]") {
  const std::vector<std::string> paths = {"examples/pod-denied.yaml", "examples/pod-needs-patch.yaml"};
  std::istringstream lines(Audit("github", paths).text);
  std::vector<std::string> got;
  const std::regex command(R"(::(error|warning) file=([^,]+),line=(\d+),col=(\d+),title=([a-z-]+)::(.+))");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    REQUIRE(std::regex_match(line, m, command));
    got.push_back(m[2].str() + ":" + m[3].str() + ":" + m[4].str() + " " + m[5].str());
    CHECK(m[6].str().rfind("Pod ml-vision/", 0) == 0);
  }
  CHECK(got == JsonFindings(paths, false));
  // A property's ":" and "," and a message's newline are escaped.
  test::TempDir dir;
  const std::string odd = dir.File("a,b:c.yaml");
  std::filesystem::copy_file(std::string(SOURCE_DIR) + "/examples/pod-denied.yaml", odd);
  const std::string text = Audit("github", {odd}).text;
  CHECK_THAT(text, Catch::Contains("a%2Cb%3Ac.yaml,line="));
  // A file name's control bytes are not written raw into the property.
  const std::string control = dir.File("t\x01\x1b[2Jab.yaml");
  std::filesystem::copy_file(std::string(SOURCE_DIR) + "/examples/pod-denied.yaml", control);
  const std::string escaped = Audit("github", {control}).text;
  CHECK_THAT(escaped, Catch::Contains("t%01%1B[2Jab.yaml,line="));
  CHECK(escaped.find('\x1b') == std::string::npos);
  CHECK(escaped.find('\x01') == std::string::npos);
}

TEST_CASE("audit -o junit: a test case per pod, failing at --fail-on", "[audit_formats]") {
  const std::vector<std::string> paths = {"examples/pod-denied.yaml", "examples/pod-needs-patch.yaml",
                                          "examples/pod-already-right.yaml"};
  auto count = [](const std::string& xml, const std::string& what) {
    size_t n = 0;
    for (size_t at = xml.find(what); at != std::string::npos; at = xml.find(what, at + 1)) ++n;
    return n;
  };
  const std::string errors = Audit("junit", paths).text;
  CHECK_THAT(errors,
             Catch::StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"shmguard audit\" "
                               "tests=\"3\" failures=\"1\""));
  CHECK(count(errors, "<testcase ") == 3);
  CHECK(count(errors, "<failure type=\"shm-over-memory-limit\"") == 1);
  CHECK_THAT(errors, Catch::Contains("<system-out>warning shm-below-need: examples/pod-needs-patch.yaml:"));
  // At --fail-on warning, the pod that needs a patch fails too, once per finding.
  const std::string warnings = Audit("junit", paths, Severity::kWarning).text;
  CHECK_THAT(warnings, Catch::Contains("tests=\"3\" failures=\"2\""));
  CHECK(count(warnings, "<failure ") == 2);  // the error; shm-below-need (no RDMA: no IPC_LOCK, no hostIPC)
  CHECK(count(errors, "memory limit 64Gi leaves") == 0);  // info findings stay out
  CHECK_THAT(Audit("junit", {"examples/argo-workflow.yaml"}).text, !Catch::Contains("<failure"));
}

TEST_CASE("audit -o policyreport: a report per namespace, a result per warning and error", "[audit_formats]") {
  const std::string yaml = Audit("policyreport", {"examples"}).text;
  std::vector<json> reports;
  for (const auto& doc : test::YamlDocuments(yaml)) reports.push_back(doc);
  std::map<std::string, json> by_namespace;
  for (const auto& r : reports) {
    CHECK(r["apiVersion"] == "wgpolicyk8s.io/v1alpha2");
    by_namespace[r["metadata"].value("namespace", "")] = r;
  }
  // team-a (Workflow, TrainJob), ml-nlp, ml-vision, train-llm, and the report example's batch,
  // ml-research and serving; the ClusterTrainingRuntime's cluster report. The Compose file has no
  // report: it is not a Kubernetes object.
  CHECK(by_namespace.size() == 8);
  REQUIRE(by_namespace.count(""));
  CHECK(by_namespace[""]["kind"] == "ClusterPolicyReport");
  const json& vision = by_namespace["ml-vision"];
  CHECK(vision["kind"] == "PolicyReport");
  CHECK(vision["metadata"]["name"] == "shmguard");
  std::map<std::string, std::string> results;  // "pod-name rule" -> result
  for (const auto& r : vision["results"]) {
    results[r["resources"][0]["name"].get<std::string>() + " " + r["rule"].get<std::string>()] = r["result"];
  }
  CHECK(results == std::map<std::string, std::string>{{"resnet-train shm-below-need", "warn"},
                                                      {"vit-huge shm-over-memory-limit", "fail"}});
  CHECK(vision["summary"] == json::parse(R"({"pass": 0, "fail": 1, "warn": 1, "error": 0, "skip": 0})"));
  for (const auto& r : vision["results"]) {
    if (r["rule"] == "shm-over-memory-limit") {
      CHECK(r["resources"][0]["fieldPath"] == "spec.containers[0].resources.limits.memory");
      CHECK(r["severity"] == "high");
      CHECK(r["properties"]["required_bytes"] == "93222600704");
    }
  }
  CHECK(by_namespace["ml-nlp"]["results"][0]["result"] == "pass");  // nothing wrong: one pass
  // With --report-api openreports: the same results in openreports.io's kinds.
  const std::string open = Audit("policyreport", {"examples"}, Severity::kError, {}, ReportApi::kOpenReports).text;
  for (const auto& doc : test::YamlDocuments(open)) {
    CHECK(doc["apiVersion"] == "openreports.io/v1alpha1");
    CHECK((doc["kind"] == "Report" || doc["kind"] == "ClusterReport"));
    CHECK(doc["source"] == "shmguard");
  }
  // An exempted finding is a "skip".
  const std::string skip =
      Audit("policyreport", {"examples/pod-denied.yaml"}, Severity::kError, {Check::kShmOverMemoryLimit}).text;
  CHECK_THAT(skip, Catch::Contains("result: skip"));
}

}  // namespace
}  // namespace shmguard::cli
