// ExportAdmissionPolicies and GlobToRegex: the objects policy mode installs, from the policy
// file's settings. That the API server's answers under them match the webhook's is
// e2e/policy_mode_test.go's to show; here, what the objects carry.
#include "shmguard/admission_policy.h"

#include <fnmatch.h>

#include <catch2/catch.hpp>
#include <regex>
#include <string>

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("GlobToRegex matches what fnmatch(3) matches", "[admission_policy]") {
  struct Case {
    const char* glob;
    const char* name;
  };
  const Case cases[] = {{"ml-*", "ml-train"},
                        {"ml-*", "xml-train"},
                        {"kube-*", "kube-system"},
                        {"*", "anything"},
                        {"a?c", "abc"},
                        {"a?c", "ac"},
                        {"team.a", "team.a"},
                        {"team.a", "teamxa"},
                        {"ns-[0-9]", "ns-7"},
                        {"ns-[!0-9]", "ns-7"},
                        {"ns-[!0-9]", "ns-x"},
                        {"a+b", "a+b"},
                        {"(x)", "(x)"},
                        {"train-*-gpu", "train-1-gpu"}};
  for (const auto& c : cases) {
    CAPTURE(c.glob, c.name);
    const std::string regex = GlobToRegex(c.glob);
    CHECK(std::regex_match(c.name, std::regex(regex, std::regex::ECMAScript)) == (fnmatch(c.glob, c.name, 0) == 0));
  }
}

// The variable `name`'s expression in a policy's spec.
std::string VariableOf(const json& policy, const std::string& name) {
  for (const auto& v : policy["spec"]["variables"]) {
    if (v["name"] == name) return v["expression"].get<std::string>();
  }
  return {};
}

TEST_CASE("ExportAdmissionPolicies writes the mutating policy, two validating ones and their bindings",
          "[admission_policy]") {
  const auto objects = ExportAdmissionPolicies(Policy{});
  REQUIRE(objects.size() == 6);
  const std::pair<const char*, const char*> want[] = {
      {"MutatingAdmissionPolicy", "shmguard"},           {"MutatingAdmissionPolicyBinding", "shmguard"},
      {"ValidatingAdmissionPolicy", "shmguard-enforce"}, {"ValidatingAdmissionPolicyBinding", "shmguard-enforce"},
      {"ValidatingAdmissionPolicy", "shmguard-warn"},    {"ValidatingAdmissionPolicyBinding", "shmguard-warn"}};
  for (size_t i = 0; i < objects.size(); ++i) {
    CAPTURE(i);
    CHECK(objects[i]["apiVersion"] == "admissionregistration.k8s.io/v1");
    CHECK(objects[i]["kind"] == want[i].first);
    CHECK(objects[i]["metadata"]["name"] == want[i].second);
    // Every placeholder was filled.
    CHECK(objects[i].dump().find('@') == std::string::npos);
  }
  // Run once: a reinvocation finds nothing left to do and costs as much again.
  CHECK(objects[0]["spec"]["reinvocationPolicy"] == "Never");
  // Every pod the mutating policy matches gets its verdict, and the validating policies skip
  // those it judged ok.
  CHECK_THAT(VariableOf(objects[0], "plan"), Catch::Contains(R"(',"verdict":"' + (size(variables.problems) == 0)"));
  bool skips_ok = false;
  for (const auto& c : objects[2]["spec"]["matchConditions"]) {
    skips_ok =
        skips_ok || (c["name"] == "not-judged-ok" &&
                     c["expression"].get<std::string>().find(R"(endsWith(',"verdict":"ok"}'))") != std::string::npos);
  }
  CHECK(skips_ok);
  CHECK(objects[3]["spec"]["validationActions"] == json::array({"Deny"}));
  CHECK(objects[5]["spec"]["validationActions"] == json::array({"Warn"}));
  // Pods only, on creation: every controller's pods are Pods by then.
  const json rules = objects[0]["spec"]["matchConstraints"]["resourceRules"];
  CHECK(rules ==
        json::parse(R"([{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods"]}])"));
  // A binding has no matchConditions: the namespaces it reaches are a selector.
  CHECK_FALSE(objects[1]["spec"].contains("matchConditions"));
  const std::string selector = objects[1]["spec"]["matchResources"]["namespaceSelector"].dump();
  CHECK_THAT(selector, Catch::Contains("kube-node-lease"));
  CHECK_THAT(selector, Catch::Contains("shmguard.io/enabled"));
}

TEST_CASE("ExportAdmissionPolicies writes the policy file's constants and namespace rules into the CEL",
          "[admission_policy]") {
  Policy policy;
  policy.sizing.safety_ppm = 1'500'000;
  policy.sizing.base_bytes = 128ll << 20;
  policy.gpu_resources = {"example.com/gpu"};
  policy.namespaces = {{.match = {"batch-*"}, .mode = NamespaceMode::kOff},
                       {.match = {"ml-*"},
                        .mode = NamespaceMode::kEnforce,
                        .require_annotations = true,
                        .pod_security = PodSecurityLevel::kBaseline,
                        .host_ipc = HostIpcMode::kAlways}};
  PolicyExportOptions options;
  options.name = "gpu-shm";
  const auto objects = ExportAdmissionPolicies(policy, options);
  REQUIRE(objects.size() == 6);
  const json& map = objects[0];
  CHECK(map["metadata"]["name"] == "gpu-shm");
  CHECK(objects[1]["spec"]["policyName"] == "gpu-shm");
  CHECK(objects[2]["metadata"]["name"] == "gpu-shm-enforce");
  CHECK_THAT(VariableOf(map, "planBytes"), Catch::Contains("* 1500000"));
  CHECK_THAT(VariableOf(map, "planBytes"), Catch::Contains(std::to_string(128ll << 20)));
  CHECK_THAT(VariableOf(map, "appGpus"), Catch::Contains("['example.com/gpu']"));
  // The first rule that matches, in order; the settings are read at its index, the last entry
  // being the {mode: warn} of a namespace no rule matches.
  CHECK(VariableOf(map, "rule") ==
        "request.namespace.matches('^(?:batch-.*)$') ? 0 : request.namespace.matches('^(?:ml-.*)$') ? 1 : 2");
  CHECK_THAT(VariableOf(map, "podSecurity"), Catch::StartsWith("[[0, 1, 0][variables.rule]"));
  CHECK(VariableOf(map, "hostIpcAlways") == "[false, true, false][variables.rule]");
  CHECK(VariableOf(map, "requireAnnotations") == "[false, true, false][variables.rule]");
  // A rule `mode: off` keeps its namespaces from the policies altogether: those for which it is
  // the first rule that matches.
  bool off = false;
  for (const auto& c : map["spec"]["matchConditions"]) {
    off = off || (c["name"] == "namespace-rule-not-off" &&
                  c["expression"] == "![true, false, false][" + VariableOf(map, "rule") + "]");
  }
  CHECK(off);
  // A rule `mode: off` after one that takes the same namespaces first does not keep them.
  policy.namespaces = {{.match = {"ml-*"}, .mode = NamespaceMode::kEnforce},
                       {.match = {"*"}, .mode = NamespaceMode::kOff}};
  const auto later_off = ExportAdmissionPolicies(policy);
  bool ml_reached = false;
  for (const auto& c : later_off[0]["spec"]["matchConditions"]) {
    ml_reached = ml_reached || (c["name"] == "namespace-rule-not-off" &&
                                c["expression"] ==
                                    "![false, true, false][request.namespace.matches('^(?:ml-.*)$') ? 0 : "
                                    "request.namespace.matches('^(?:.*)$') ? 1 : 2]");
  }
  CHECK(ml_reached);
}

}  // namespace
}  // namespace shmguard
