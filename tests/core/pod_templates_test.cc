// FindPodTemplates over the kinds it knows, and the real JobSet examples.
#include <catch2/catch.hpp>

#include "io/manifests.h"
#include "shmguard/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("FindPodTemplates knows where each kind keeps its pod spec", "[pod_templates]") {
  struct Case {
    const char* yaml;
    const char* spec_pointer;
    int64_t pods_together;
  };
  const Case cases[] = {
      {"apiVersion: v1\nkind: Pod\nspec: {containers: []}\n", "/spec", 1},
      {"apiVersion: batch/v1\nkind: Job\nspec: {parallelism: 4, template: {spec: {}}}\n", "/spec/template/spec", 4},
      {"apiVersion: batch/v1\nkind: CronJob\nspec: {jobTemplate: {spec: {template: {spec: {}}}}}\n",
       "/spec/jobTemplate/spec/template/spec", 1},
      {"apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 3, template: {spec: {}}}\n", "/spec/template/spec", 1},
      {"apiVersion: apps/v1\nkind: StatefulSet\nspec: {replicas: 3, template: {spec: {}}}\n", "/spec/template/spec", 3},
  };
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    json obj = test::Yaml(c.yaml);
    auto w = FindPodTemplates(obj);
    REQUIRE(w.has_value());
    REQUIRE(w->templates.size() == 1);
    CHECK(w->templates[0].spec_pointer == c.spec_pointer);
    CHECK(w->templates[0].pods_together == c.pods_together);
  }
}

TEST_CASE("FindPodTemplates reads every JobSet example of kubernetes-sigs/jobset", "[pod_templates][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  int jobsets = 0;
  auto files = io::ExpandPaths({test::CorpusPath("jobset")});
  REQUIRE(files.has_value());
  for (const auto& file : *files) {
    for (const auto& doc : io::ParseManifests(*io::ReadFileText(file), file)) {
      if (!doc.object || (*doc.object).value("kind", "") != "JobSet") continue;
      CAPTURE(file);
      auto w = FindPodTemplates(*doc.object);
      REQUIRE(w.has_value());
      CHECK(w->templates.size() == (*doc.object)["spec"]["replicatedJobs"].size());
      for (const auto& t : w->templates) {
        CHECK_THAT(t.spec_pointer, Catch::Matches("/spec/replicatedJobs/[0-9]+/template/spec/template/spec"));
        CHECK(t.spec.IsObject());
      }
      ++jobsets;
    }
  }
  CHECK(jobsets >= 17);
}

TEST_CASE("FindPodTemplates counts the pods a replicated job runs together", "[pod_templates]") {
  json obj = test::Yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pytorch}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        parallelism: 4
        completions: 4
        template: {spec: {containers: [{name: pytorch, image: pytorch:latest}]}}
)");
  auto w = FindPodTemplates(obj);
  REQUIRE(w.has_value());
  CHECK(w->templates[0].pods_together == 4);  // replicas 1 × parallelism 4
  CHECK(w->templates[0].label == "replicatedJob workers");
}

TEST_CASE("FindPodTemplates merges workload and template annotations", "[pod_templates]") {
  json obj = test::Yaml(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi, unrelated: x}}
spec: {template: {metadata: {annotations: {shmguard.io/batch-bytes: 2Mi}}, spec: {}}}
)");
  auto w = FindPodTemplates(obj);
  REQUIRE(w.has_value());
  const auto& a = w->templates[0].annotations;
  CHECK(a.size() == 2);
  CHECK(a.at("shmguard.io/batch-bytes").String() == "2Mi");
  CHECK(a.at("shmguard.io/num-workers").String() == "1");
  CHECK(AdmissionRoleOf("v1", "Pod") == AdmissionRole::kMutate);
  CHECK(AdmissionRoleOf("jobset.x-k8s.io/v1alpha2", "JobSet") == AdmissionRole::kMutate);
  CHECK(AdmissionRoleOf("ray.io/v1", "RayCluster") == AdmissionRole::kValidate);
  CHECK(AdmissionRoleOf("apps/v1", "Deployment") == AdmissionRole::kNone);
}

}  // namespace
}  // namespace shmguard
