// ExportAdmissionPolicies: the objects policy mode installs, from the policy file's settings;
// every value a variable of its own, escaped, and what CEL cannot hold refused. That the API server's answers under
// them match the webhook's is e2e/policy_mode_test.go's to show; here, what the objects carry.
#include "core/cel/admission_policy.h"

#include <fnmatch.h>

#include <catch2/catch.hpp>
#include <functional>
#include <regex>
#include <string>

namespace shmguard {
namespace {

using nlohmann::json;

// The variable `name`'s expression in a policy's spec.
std::string VariableOf(const json& policy, const std::string& name) {
  for (const auto& v : policy["spec"]["variables"]) {
    if (v["name"] == name) return v["expression"].get<std::string>();
  }
  return {};
}

TEST_CASE("ExportAdmissionPolicies writes the mutating policy, four validating ones and their bindings",
          "[admission_policy]") {
  const auto exported = ExportAdmissionPolicies(Policy{});
  REQUIRE(exported);
  const auto& objects = *exported;
  REQUIRE(objects.size() == 10);
  const std::pair<const char*, const char*> want[] = {{"MutatingAdmissionPolicy", "shmguard"},
                                                      {"MutatingAdmissionPolicyBinding", "shmguard"},
                                                      {"ValidatingAdmissionPolicy", "shmguard-enforce"},
                                                      {"ValidatingAdmissionPolicyBinding", "shmguard-enforce"},
                                                      {"ValidatingAdmissionPolicy", "shmguard-warn"},
                                                      {"ValidatingAdmissionPolicyBinding", "shmguard-warn"},
                                                      {"ValidatingAdmissionPolicy", "shmguard-resize-enforce"},
                                                      {"ValidatingAdmissionPolicyBinding", "shmguard-resize-enforce"},
                                                      {"ValidatingAdmissionPolicy", "shmguard-resize-warn"},
                                                      {"ValidatingAdmissionPolicyBinding", "shmguard-resize-warn"}};
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
  CHECK(objects[7]["spec"]["validationActions"] == json::array({"Deny"}));
  CHECK(objects[9]["spec"]["validationActions"] == json::array({"Warn"}));
  // A resize: UPDATE of the pods/resize subresource, the pod before it read as oldObject, with
  // the same pods and namespaces matched as on creation.
  CHECK(
      objects[6]["spec"]["matchConstraints"]["resourceRules"] ==
      json::parse(R"([{"apiGroups":[""],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["pods/resize"]}])"));
  CHECK_THAT(VariableOf(objects[6], "oldLimit"), Catch::StartsWith("oldObject.spec.?resources"));
  CHECK(objects[6]["spec"]["matchConditions"] == objects[0]["spec"]["matchConditions"]);
  CHECK(objects[7]["spec"]["matchResources"] == objects[3]["spec"]["matchResources"]);
  // The memory limit on creation and on a resize is one expression.
  CHECK(VariableOf(objects[6], "newLimit") == VariableOf(objects[0], "memoryLimit"));
  // Pods only, on creation: every controller's pods are Pods by then.
  const json rules = objects[0]["spec"]["matchConstraints"]["resourceRules"];
  CHECK(rules ==
        json::parse(R"([{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods"]}])"));
  // A binding has no matchConditions: the namespaces it reaches are a selector.
  CHECK_FALSE(objects[1]["spec"].contains("matchConditions"));
  const std::string selector = objects[1]["spec"]["matchResources"]["namespaceSelector"].dump();
  CHECK_THAT(selector, Catch::Contains("kube-node-lease"));
  CHECK_THAT(selector, Catch::Contains("shmguard.io/enabled"));
  // The plan names the volume the policy added or raised, and from what: the floor the webhook
  // puts its own plan in place of in hybrid mode.
  CHECK_THAT(
      VariableOf(objects[0], "plan"),
      Catch::Contains(R"(',"raisedFrom":"' + string(variables.volumes[variables.volumeIndex].emptyDir.sizeLimit))"));
  CHECK_THAT(VariableOf(objects[0], "plan"), Catch::Contains(R"(',"volume":"' + variables.volumeName)"));
  // Hybrid: the mutating policy and its binding only, as policy mode's but that the plan goes
  // only into a pod the policy changes (no validating policy reads its verdict).
  const auto hybrid = ExportAdmissionPolicies(Policy{}, {.hybrid = true});
  REQUIRE(hybrid);
  REQUIRE(hybrid->size() == 2);
  const std::string all = objects[0]["spec"]["mutations"][0]["jsonPatch"]["expression"];
  const std::string changed = (*hybrid)[0]["spec"]["mutations"][0]["jsonPatch"]["expression"];
  CHECK_THAT(all, Catch::StartsWith("(!variables.changes ? [] : ("));
  CHECK_THAT(changed, Catch::StartsWith("!variables.changes ? [] : ("));
  json same = (*hybrid)[0];
  same["spec"]["mutations"][0]["jsonPatch"]["expression"] = all;
  CHECK(same == objects[0]);
  CHECK((*hybrid)[1] == objects[1]);
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
  const auto exported = ExportAdmissionPolicies(policy, options);
  REQUIRE(exported);
  const auto& objects = *exported;
  REQUIRE(objects.size() == 10);
  const json& map = objects[0];
  CHECK(map["metadata"]["name"] == "gpu-shm");
  CHECK(objects[1]["spec"]["policyName"] == "gpu-shm");
  CHECK(objects[2]["metadata"]["name"] == "gpu-shm-enforce");
  // The policy's values are variables of their own, literals; the expressions read them.
  CHECK(VariableOf(map, "safetyPpm") == "1500000");
  CHECK(VariableOf(map, "baseBytes") == std::to_string(128ll << 20));
  CHECK_THAT(VariableOf(map, "planBytes"), Catch::Contains("* variables.safetyPpm"));
  CHECK_THAT(VariableOf(map, "planBytes"), Catch::Contains("variables.baseBytes"));
  CHECK(VariableOf(map, "gpuResources") == "['example.com/gpu']");
  CHECK_THAT(VariableOf(map, "appGpus"), Catch::Contains("variables.gpuResources"));
  // The first rule that matches, in order; the settings are read at its index, the last entry
  // being the {mode: warn} of a namespace no rule matches.
  CHECK(VariableOf(map, "ruleRegexes") == "['^(?:batch-.*)$', '^(?:ml-.*)$']");
  CHECK(VariableOf(map, "rule") ==
        "(variables.ruleRegexes.transformList(i, r, request.namespace.matches(r), i) + "
        "[size(variables.ruleRegexes)])[0]");
  CHECK(VariableOf(map, "ruleLevel") == "[0, 1, 0][variables.rule]");
  CHECK(VariableOf(map, "ruleHostIpc") == "[false, true, false][variables.rule]");
  CHECK(VariableOf(map, "ruleRequire") == "[false, true, false][variables.rule]");
  // A rule `mode: off` keeps its namespaces from the policies altogether: those for which it is
  // the first rule that matches (matchConditions read no variables: the rule's index in full).
  const std::string first_rule =
      "(['^(?:batch-.*)$', '^(?:ml-.*)$'].transformList(i, r, request.namespace.matches(r), i) + [2])[0]";
  bool off = false;
  for (const auto& c : map["spec"]["matchConditions"]) {
    off = off ||
          (c["name"] == "namespace-rule-not-off" && c["expression"] == "![true, false, false][" + first_rule + "]");
  }
  CHECK(off);
}

// What an operator's own input puts in the export is a value, never CEL: a label or glob that
// would end its literal is escaped, a placeholder-like text stays as written, and what CEL
// cannot hold is refused with the field named.
TEST_CASE("ExportAdmissionPolicies escapes every value and refuses what CEL cannot hold", "[admission_policy]") {
  Policy policy;
  policy.namespaces = {{.match = {"team-[@GPUS@]"}, .mode = NamespaceMode::kEnforce}};
  policy.gpu_resources = {"x.example.com/gpu"};
  PolicyExportOptions o;
  o.enforce_label = "x'].orValue('') == 'true' || true || ['";
  o.pod_security_label = "a\nb";
  auto exported = ExportAdmissionPolicies(policy, o);
  REQUIRE(exported);
  const json& map = (*exported)[0];
  CHECK(VariableOf(map, "enforceLabel") == "'x\\'].orValue(\\'\\') == \\'true\\' || true || [\\''");
  CHECK(VariableOf(map, "podSecurityLabel") == "'a\\x0ab'");
  CHECK(VariableOf(map, "ruleRegexes") == "['^(?:team-[@GPUS@])$']");  // as written, expanded once: never
  for (const auto& v : map["spec"]["variables"]) {
    CAPTURE(v["name"].get<std::string>());
    CHECK(v["expression"].get<std::string>().find('\n') == std::string::npos);
  }

  const struct {
    const char* name;
    std::function<void(Policy&)> set;
    const char* error;
  } refused[] = {
      {"a reversed range", [](Policy& p) { p.namespaces = {{.match = {"team-[z-a]"}}}; }, "a reversed range z-a"},
      {"an empty negated class", [](Policy& p) { p.namespaces = {{.match = {"x-[!]"}}}; }, "left open"},
      {"a class left open", [](Policy& p) { p.namespaces = {{.match = {"ml-[[:alpha:]"}}}; }, "left open"},
      {"a newline in a class", [](Policy& p) { p.namespaces = {{.match = {"ml-[a\n]"}}}; }, "printable ASCII"},
      {"an rdma glob RE2 refuses", [](Policy& p) { p.rdma_resources = {"rdma/[z-a]"}; }, "rdmaResources"},
      {"a rule of 20,000 globs",
       [](Policy& p) {
         NamespaceRule r;
         for (int i = 0; i < 20000; ++i) r.match.push_back("team-" + std::to_string(i));
         p.namespaces = {r};
       },
       "split the rule"},
      {"more rules than CEL may read",
       [](Policy& p) {
         p.namespaces.clear();
         for (size_t i = 0; i <= kMaxCelNamespaceRules; ++i)
           p.namespaces.push_back({.match = {"t" + std::to_string(i)}});
       },
       "rules, more than"},
  };
  for (const auto& r : refused) {
    SECTION(r.name) {
      Policy p;
      r.set(p);
      auto e = ExportAdmissionPolicies(p);
      REQUIRE_FALSE(e);
      CHECK_THAT(e.error().message, Catch::Contains(r.error));
    }
  }
  // 249 rules: a flat list, no nesting for the parser.
  Policy many;
  for (int i = 0; i < 249; ++i) many.namespaces.push_back({.match = {"team-" + std::to_string(i) + "-*"}});
  auto flat = ExportAdmissionPolicies(many);
  REQUIRE(flat);
  CHECK(VariableOf((*flat)[0], "rule").find('?') == std::string::npos);
}

}  // namespace
}  // namespace shmguard
