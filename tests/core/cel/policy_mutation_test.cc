// PatchExpression and PlanExpression: policy mode's mutation, fixed text that reads the
// variables PodVariables defines.
#include "core/cel/internal/policy_mutation.h"

#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>

#include "core/cel/internal/pod_variables.h"

namespace shmguard::cel {
namespace {

TEST_CASE("PatchExpression writes the plan always in policy mode and only with a change in hybrid mode",
          "[policy_mutation]") {
  const std::string policy = PatchExpression(false), hybrid = PatchExpression(true);
  CHECK_THAT(policy, Catch::StartsWith("(!variables.changes ? [] : "));
  CHECK_THAT(policy, Catch::Contains(") + [has(object.metadata.annotations)"));
  CHECK_THAT(hybrid, Catch::StartsWith("!variables.changes ? [] : "));
  CHECK(hybrid.size() + 2 == policy.size());  // the same operations, grouped otherwise
  // The operations in BuildPodPatch's order: the volume, its sizeLimit, the mounts, IPC_LOCK, hostIPC.
  size_t at = 0;
  for (const char* path :
       {"\"/spec/volumes/-\"", "\"/emptyDir/sizeLimit\"", "\"/spec/containers/\"", "\"/spec/initContainers/\"",
        "\"/securityContext\"", "\"/spec/hostIPC\"", "\"/metadata/annotations/shmguard.io~1plan\""}) {
    CAPTURE(path);
    const size_t found = policy.find(path, at);
    REQUIRE(found != std::string::npos);
    at = found;
  }
}

TEST_CASE("The mutation reads only variables the pod's path defines, and the plan ends with the verdict",
          "[policy_mutation]") {
  std::set<std::string> defined;
  for (const auto& [name, expression] : PodVariables()) defined.insert(name);
  defined.insert("plan");  // the mutating policy's own, PlanExpression
  const std::regex reference(R"(variables\.([A-Za-z]+))");
  for (const std::string& text : {PatchExpression(false), PlanExpression()}) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), reference); it != std::sregex_iterator(); ++it) {
      CAPTURE((*it)[1].str());
      CHECK(defined.count((*it)[1].str()) == 1);
    }
  }
  CHECK_THAT(PlanExpression(),
             Catch::EndsWith(R"(',"verdict":"' + (size(variables.problems) == 0 ? 'ok' : 'deny') + '"}')"));
}

}  // namespace
}  // namespace shmguard::cel
