// PodVariables: policy mode's pod path as CEL variables, in an order in which each reads only the
// policy's values and the variables before it.
#include "core/cel/internal/pod_variables.h"

#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>

#include "core/cel/admission_policy.h"

namespace shmguard::cel {
namespace {

TEST_CASE("PodVariables reads only the policy's values and the variables before each", "[pod_variables]") {
  const CelVariables pod = PodVariables();
  REQUIRE(pod.size() > 50);
  CHECK(pod.front().first == "rule");  // bound right after ruleRegexes
  // The policy's values are the exported variables that are not the pod's.
  std::set<std::string> defined;
  const auto exported = ExportAdmissionPolicies(Policy{});
  REQUIRE(exported);
  std::set<std::string> pod_names;
  for (const auto& [name, expression] : pod) pod_names.insert(name);
  for (const auto& v : (*exported)[0]["spec"]["variables"]) {
    const std::string name = v["name"].get<std::string>();
    if (!pod_names.count(name) && name != "plan") defined.insert(name);
  }
  CHECK(defined.count("safetyPpm") == 1);
  CHECK(defined.count("ruleRegexes") == 1);
  const std::regex reference(R"(variables\.([A-Za-z]+))");
  for (const auto& [name, expression] : pod) {
    CAPTURE(name);
    CHECK(defined.count(name) == 0);  // each name once, and none of the policy's values
    for (auto it = std::sregex_iterator(expression.begin(), expression.end(), reference); it != std::sregex_iterator();
         ++it) {
      CAPTURE((*it)[1].str());
      CHECK(defined.count((*it)[1].str()) == 1);
    }
    CHECK(expression.find('\n') == std::string::npos);
    defined.insert(name);
  }
}

TEST_CASE("PodVariables is the same text for every policy", "[pod_variables]") {
  Policy other;
  other.namespaces = {{.match = {"ml-*"}, .mode = NamespaceMode::kEnforce}};
  other.sizing.safety_ppm = 1'500'000;
  other.gpu_resources = {"x.example.com/gpu"};
  const auto a = ExportAdmissionPolicies(Policy{});
  const auto b = ExportAdmissionPolicies(other);
  REQUIRE(a);
  REQUIRE(b);
  const CelVariables pod = PodVariables();
  for (const auto& [name, expression] : pod) {
    CAPTURE(name);
    for (const auto* exported : {&*a, &*b}) {
      bool found = false;
      for (const auto& v : (*exported)[0]["spec"]["variables"]) {
        if (v["name"] == name) found = v["expression"] == expression;
      }
      CHECK(found);
    }
  }
}

}  // namespace
}  // namespace shmguard::cel
