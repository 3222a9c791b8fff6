// The table of kinds: each kind once at each version, found by apiVersion and kind; the error
// that names the versions a kind is read at, or every kind; what the webhooks must register.
#include <catch2/catch.hpp>
#include <set>

#include "core/workloads/internal/kinds.h"
#include "core/workloads/pod_templates.h"

namespace shmguard::workloads {
namespace {

TEST_CASE("The kind table holds each apiVersion and kind once, and finds each", "[kind_table]") {
  std::set<std::pair<std::string, std::string>> seen;
  for (const KindInfo& k : KnownKinds()) {
    CAPTURE(k.api_version, k.kind);
    CHECK(seen.emplace(std::string(k.api_version), std::string(k.kind)).second);
    const KindSpec* spec = FindKind(k.api_version, k.kind);
    REQUIRE(spec != nullptr);
    CHECK(spec->kind == k.kind);
    CHECK(AdmissionRoleOf(std::string(k.api_version), std::string(k.kind)) == k.role);
    // A kind the API serves has its resource, for the webhook configurations' rules.
    if (!k.api_version.empty()) CHECK_FALSE(k.resource.empty());
  }
  CHECK(seen.size() > 20);
  CHECK(seen.count({"v1", "Pod"}));
  CHECK(seen.count({"jobset.x-k8s.io/v1alpha2", "JobSet"}));
  CHECK(AdmissionRoleOf("v1", "Pod") == AdmissionRole::kMutate);
  CHECK(AdmissionRoleOf("v1", "ConfigMap") == AdmissionRole::kNone);
}

TEST_CASE("LookUpKind names the versions a kind is read at, else every kind it reads", "[kind_table]") {
  auto found = LookUpKind("batch/v1", "Job");
  REQUIRE(found);
  CHECK((*found)->kind == "Job");

  auto old = LookUpKind("kubeflow.org/v9", "PyTorchJob");
  REQUIRE_FALSE(old);
  CHECK(old.error().code == Code::kUnsupportedKind);
  CHECK(old.error().message ==
        "kubeflow.org/v9 PyTorchJob is not a version shmguard reads: it reads PyTorchJob as kubeflow.org/v1");

  auto other = LookUpKind("v1", "ConfigMap");
  REQUIRE_FALSE(other);
  CHECK_THAT(other.error().message, Catch::StartsWith("v1 ConfigMap is not a workload shmguard sizes (Pod, "));
  CHECK_THAT(other.error().message, Catch::EndsWith(", or a Compose file)"));
  // Each kind named once, however many versions it is read at.
  const std::string& m = other.error().message;
  CHECK(m.find("JobSet,") == m.rfind("JobSet,"));
}

}  // namespace
}  // namespace shmguard::workloads
