// FindPodTemplates over the kinds it knows, and the real JobSet examples.
#include "core/workloads/pod_templates.h"

#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/verdict/evaluation.h"
#include "io/files/manifests.h"
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
  for (const auto& input : io::ExpandPaths({test::CorpusPath("jobset")})) {
    REQUIRE_FALSE(input.error);
    const std::string& file = input.path;
    for (const auto& doc : io::ParseManifests(*io::ReadFileText(file), file)) {
      if (!doc.object || doc.object->Root().StringMember("kind") != "JobSet") continue;
      CAPTURE(file);
      const json object = doc.object->ToJson();
      auto w = FindPodTemplates(object);
      REQUIRE(w.has_value());
      CHECK(w->templates.size() == object["spec"]["replicatedJobs"].size());
      for (const auto& t : w->templates) {
        CHECK_THAT(t.spec_pointer, Catch::Matches("/spec/replicatedJobs/[0-9]+/template/spec/template/spec"));
        CHECK(t.spec.IsObject());
      }
      ++jobsets;
    }
  }
  CHECK(jobsets >= 17);
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
  CHECK(AdmissionRoleOf("apps/v1", "Deployment") == AdmissionRole::kMutate);
  CHECK(AdmissionRoleOf("apps/v1", "ReplicaSet") == AdmissionRole::kNone);  // made by Deployments from their template
  CHECK(AdmissionRoleOf("v1", "Service") == AdmissionRole::kNone);
}

// One hand-written object of every kind in the table: the templates found, their labels, the
// pods that train together and the processes the kind states.
TEST_CASE("FindPodTemplates reads every kind of the table as its controller does", "[pod_templates]") {
  struct Expected {
    std::string label, spec_pointer;
    int64_t pods;
    std::string procs;
    bool patchable = true, operator_shm = false;
  };
  struct Case {
    const char* name;
    const char* yaml;
    std::vector<Expected> templates;
    AdmissionRole role;
  } cases[] = {
      {"PyTorchJob",
       R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
spec:
  nprocPerNode: "4"
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch}]}}}
    Worker: {replicas: 8, template: {spec: {containers: [{name: pytorch}]}}}
)",
       {{"Master", "/spec/pytorchReplicaSpecs/Master/template/spec", 9, "4"},
        {"Worker", "/spec/pytorchReplicaSpecs/Worker/template/spec", 9, "4"}},
       AdmissionRole::kMutate},
      {"TFJob, replicas defaulted",
       R"(apiVersion: kubeflow.org/v1
kind: TFJob
spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: tf}]}}}}}
)",
       {{"Worker", "/spec/tfReplicaSpecs/Worker/template/spec", 1, ""}},
       AdmissionRole::kMutate},
      {"MPIJob",
       R"(apiVersion: kubeflow.org/v2beta1
kind: MPIJob
spec:
  slotsPerWorker: 8
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: l}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: w}]}}}
)",
       {{"Launcher", "/spec/mpiReplicaSpecs/Launcher/template/spec", 1, ""},
        {"Worker", "/spec/mpiReplicaSpecs/Worker/template/spec", 2, "8"}},
       AdmissionRole::kMutate},
      {"ClusterTrainingRuntime",
       R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
spec:
  mlPolicy: {numNodes: 3, torch: {numProcPerNode: auto}}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template: {spec: {template: {spec: {containers: [{name: init}]}}}}
      - name: node
        template: {spec: {template: {spec: {containers: [{name: node}]}}}}
)",
       {{"replicatedJob dataset-initializer", "/spec/template/spec/replicatedJobs/0/template/spec/template/spec", 1,
         ""},
        {"replicatedJob node", "/spec/template/spec/replicatedJobs/1/template/spec/template/spec", 3, "auto"}},
       AdmissionRole::kMutate},
      {"RayCluster",
       R"(apiVersion: ray.io/v1
kind: RayCluster
spec:
  headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: head}]}}}
  workerGroupSpecs:
  - {groupName: gpu, replicas: 2, numOfHosts: 2, template: {spec: {containers: [{name: w}]}}}
  - {groupName: cpu, replicas: 1, rayStartParams: {plasma-directory: /tmp}, template: {spec: {containers: [{name: c}]}}}
)",
       {{"headGroup", "/spec/headGroupSpec/template/spec", 6, "", false, true},
        {"workerGroup gpu", "/spec/workerGroupSpecs/0/template/spec", 6, "", false, true},
        {"workerGroup cpu", "/spec/workerGroupSpecs/1/template/spec", 6, "", false, false}},
       AdmissionRole::kValidate},
      {"RayJob with a submitter",
       R"(apiVersion: ray.io/v1
kind: RayJob
spec:
  rayClusterSpec: {headGroupSpec: {template: {spec: {containers: [{name: head}]}}}}
  submitterPodTemplate: {spec: {containers: [{name: submit}]}}
)",
       {{"headGroup", "/spec/rayClusterSpec/headGroupSpec/template/spec", 1, "", false, true},
        {"submitter", "/spec/submitterPodTemplate/spec", 1, "", false, false}},
       AdmissionRole::kValidate},
      {"RayJob on an existing cluster",
       "apiVersion: ray.io/v1\nkind: RayJob\nspec: {clusterSelector: {a: b}}\n",
       {},
       AdmissionRole::kValidate},
      {"LeaderWorkerSet",
       R"(apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
spec:
  replicas: 3
  leaderWorkerTemplate:
    size: 4
    leaderTemplate: {spec: {containers: [{name: leader}]}}
    workerTemplate: {spec: {containers: [{name: worker}]}}
)",
       {{"leader", "/spec/leaderWorkerTemplate/leaderTemplate/spec", 4, ""},
        {"worker", "/spec/leaderWorkerTemplate/workerTemplate/spec", 4, ""}},
       AdmissionRole::kMutate},
      {"LeaderWorkerSet without a leader template",
       "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"
       "spec: {leaderWorkerTemplate: {size: 2, workerTemplate: {spec: {containers: [{name: w}]}}}}\n",
       {{"worker", "/spec/leaderWorkerTemplate/workerTemplate/spec", 2, ""}},
       AdmissionRole::kMutate},
      {"Volcano Job",
       R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
spec:
  tasks:
  - {name: master, replicas: 1, template: {spec: {containers: [{name: m}]}}}
  - {name: worker, replicas: 4, template: {spec: {containers: [{name: w}]}}}
)",
       {{"task master", "/spec/tasks/0/template/spec", 5, ""}, {"task worker", "/spec/tasks/1/template/spec", 5, ""}},
       AdmissionRole::kMutate},
      {"Argo Workflow: container, script and containerSet templates are pods, steps are not",
       R"(apiVersion: argoproj.io/v1alpha1
kind: Workflow
spec:
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: a, template: train}]]}
  - {name: train, container: {image: pytorch}}
  - {name: prep, script: {image: python, source: "x = 1"}}
  - {name: pair, containerSet: {containers: [{name: a}, {name: b}]}}
  - {name: make-job, resource: {action: create, manifest: "{}"}}
)",
       {{"template train", "/spec/templates/1", 1, ""},
        {"template prep", "/spec/templates/2", 1, ""},
        {"template pair", "/spec/templates/3", 1, ""}},
       AdmissionRole::kMutate},
      {"Argo CronWorkflow",
       R"(apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
spec: {schedule: "0 * * * *", workflowSpec: {templates: [{name: t, container: {image: x}}]}}
)",
       {{"template t", "/spec/workflowSpec/templates/0", 1, ""}},
       AdmissionRole::kMutate},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    json obj = test::Yaml(c.yaml);
    auto w = FindPodTemplates(obj);
    INFO((w ? "" : w.error().ToString()));
    REQUIRE(w.has_value());
    REQUIRE(w->templates.size() == c.templates.size());
    for (size_t i = 0; i < c.templates.size(); ++i) {
      const PodTemplate& t = w->templates[i];
      const Expected& e = c.templates[i];
      CAPTURE(i, t.pods_source, t.procs_source);
      CHECK(t.label == e.label);
      CHECK(t.spec_pointer == e.spec_pointer);
      CHECK(t.pods_together == e.pods);
      CHECK(t.procs_field == e.procs);
      CHECK(t.patchable == e.patchable);
      CHECK(t.operator_shm == e.operator_shm);
    }
    CHECK(AdmissionRoleOf(w->api_version, w->kind) == c.role);
  }
  // A wrong shape names the field.
  auto bad =
      FindPodTemplates(test::Yaml("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {pytorchReplicaSpecs: [1]}\n"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().ToString() == "/spec/pytorchReplicaSpecs: must be a mapping of replica types");
}

}  // namespace
}  // namespace shmguard

namespace shmguard {
namespace {

// world/facts.json in the corpus records, per pod template of 43 real manifests, where it is,
// its GPUs and what is at /dev/shm: shmguard must find the same.
TEST_CASE("FindPodTemplates and Evaluate agree with the facts of the real-world manifests", "[pod_templates][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  json facts = json::parse(test::ReadCorpus("world/facts.json"));
  int checked = 0;
  for (const auto& [file, entries] : facts.items()) {
    if (entries.empty() || entries[0]["kind"].is_null()) continue;  // Compose files
    auto docs = io::ParseManifests(test::ReadCorpus("world/" + file), file);
    for (const auto& e : entries) {
      CAPTURE(file, e.dump());
      const json object = docs.at(e["doc"].get<size_t>()).object->ToJson();
      auto w = FindPodTemplates(object);
      REQUIRE(w.has_value());
      const PodTemplate* t = nullptr;
      for (const auto& c : w->templates) {
        if (c.spec_pointer == e["path"]) t = &c;
      }
      // The facts list a TrainJob's spec.trainer and its runtime patches apart; shmguard reads
      // the trainer job as both together (spec.trainer's resources, the patch's volumes), found
      // at /spec/trainer. Its GPUs are checked there; its /dev/shm in train_job_test.cc.
      const bool merged = e["kind"] == "TrainJob";
      if (!t && merged) {
        for (const auto& c : w->templates) {
          if (c.spec_pointer == "/spec/trainer") t = &c;
        }
        REQUIRE(t != nullptr);
        ++checked;
        continue;
      }
      REQUIRE(t != nullptr);
      auto f = ReadPodFacts(*t, Policy{});
      REQUIRE(f.has_value());
      CHECK(f->gpus == (e["gpus_per_pod"].is_null() ? 0 : e["gpus_per_pod"].get<int64_t>()));
      if (merged) {
        ++checked;
        continue;
      }
      Evaluation ev = Evaluate(object, Policy{});
      std::string current;
      for (const auto& p : ev.pods) {
        if (p.path == e["path"]) current = p.current_shm;
      }
      std::string shm = e["dev_shm"];
      CAPTURE(current);
      if (shm == "emptyDir-memory") CHECK_THAT(current, Catch::StartsWith("emptyDir Memory"));
      if (shm == "hostPath") CHECK_THAT(current, Catch::StartsWith("hostPath"));
      if (shm == "none" && e["host_ipc"] == true) CHECK(current == "the node's /dev/shm (hostIPC: true)");
      if (shm == "none" && e["host_ipc"] == false && !t->operator_shm) CHECK(current == "64Mi (container default)");
      if (shm == "none" && t->operator_shm) CHECK_THAT(current, Catch::Contains("KubeRay's shared-mem"));
      ++checked;
    }
  }
  CHECK(checked >= 50);
}

}  // namespace
}  // namespace shmguard
