// CountPods (through FindPodTemplates): the pods each kind's controller runs together and the
// processes in each, and the words reasons use for them ("9 pods (Master ×1, Worker ×8)").
#include <catch2/catch.hpp>

#include "core/workloads/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

TEST_CASE("CountPods counts pods and processes as each controller does, and says how", "[pod_counts]") {
  struct Expected {
    const char* label;
    int64_t pods;
    const char* pods_source;
    const char* procs;
    const char* procs_source;
  };
  struct Case {
    const char* yaml;
    std::vector<Expected> templates;
  };
  const Case cases[] = {
      {"apiVersion: batch/v1\nkind: Job\nspec: {parallelism: 4, template: {spec: {}}}\n",
       {{"pod template", 4, "4 pods (parallelism)", "", ""}}},
      {"apiVersion: batch/v1\nkind: Job\nspec: {parallelism: 1, template: {spec: {}}}\n",
       {{"pod template", 1, "1 pod (parallelism)", "", ""}}},
      {"apiVersion: apps/v1\nkind: StatefulSet\nspec: {replicas: 3, template: {spec: {}}}\n",
       {{"pod template", 3, "3 pods (replicas)", "", ""}}},
      {"apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 3, template: {spec: {}}}\n",
       {{"pod template", 1, "", "", ""}}},  // replicas of a Deployment do not train together
      {R"(apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
spec:
  replicatedJobs:
  - {name: workers, replicas: 2, template: {spec: {parallelism: 4, template: {spec: {}}}}}
  - {name: driver, template: {spec: {template: {spec: {}}}}}
)",
       {{"replicatedJob workers", 8, "8 pods in the replicatedJob workers", "", ""},
        {"replicatedJob driver", 1, "1 pod in the replicatedJob driver", "", ""}}},
      {R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
spec:
  elasticPolicy: {nProcPerNode: 2}
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {}}}
    Worker: {replicas: 8, template: {spec: {}}}
)",  // PET_NNODES is the sum of the replicas; the deprecated elasticPolicy.nProcPerNode is still read
       {{"Master", 9, "9 pods (Master ×1, Worker ×8)", "2", "spec.elasticPolicy.nProcPerNode"},
        {"Worker", 9, "9 pods (Master ×1, Worker ×8)", "2", "spec.elasticPolicy.nProcPerNode"}}},
      {R"(apiVersion: kubeflow.org/v2beta1
kind: MPIJob
spec:
  slotsPerWorker: 8
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {}}}
    Worker: {replicas: 2, template: {spec: {}}}
)",  // the launcher only runs mpirun
       {{"Launcher", 1, "", "", ""}, {"Worker", 2, "2 pods (Worker ×2)", "8", "spec.slotsPerWorker"}}},
      {R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
spec:
  mlPolicy: {numNodes: 3, torch: {numProcPerNode: auto}}
  template:
    spec:
      replicatedJobs:
      - {name: initializer, template: {spec: {template: {spec: {}}}}}
      - {name: node, template: {spec: {template: {spec: {}}}}}
)",
       {{"replicatedJob initializer", 1, "1 pod in the replicatedJob initializer", "", ""},
        {"replicatedJob node", 3, "3 nodes (mlPolicy.numNodes)", "auto", "mlPolicy.torch.numProcPerNode"}}},
      {R"(apiVersion: ray.io/v1
kind: RayCluster
spec:
  headGroupSpec: {template: {spec: {}}}
  workerGroupSpecs:
  - {groupName: gpu, replicas: 2, numOfHosts: 2, template: {spec: {}}}
)",
       {{"headGroup", 5, "5 pods (headGroup ×1, workerGroup gpu ×4)", "", ""},
        {"workerGroup gpu", 5, "5 pods (headGroup ×1, workerGroup gpu ×4)", "", ""}}},
      {"apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"
       "spec: {leaderWorkerTemplate: {size: 4, workerTemplate: {spec: {}}}}\n",
       {{"worker", 4, "4 pods in a group (leaderWorkerTemplate.size)", "", ""}}},
      {R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
spec:
  tasks:
  - {name: master, replicas: 1, template: {spec: {}}}
  - {name: worker, replicas: 3, template: {spec: {}}}
)",
       {{"task master", 4, "4 pods (task master ×1, task worker ×3)", "", ""},
        {"task worker", 4, "4 pods (task master ×1, task worker ×3)", "", ""}}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    nlohmann::json object = test::Yaml(c.yaml);
    auto w = FindPodTemplates(object);
    INFO((w ? "" : w.error().ToString()));
    REQUIRE(w.has_value());
    REQUIRE(w->templates.size() == c.templates.size());
    for (size_t i = 0; i < c.templates.size(); ++i) {
      const PodTemplate& t = w->templates[i];
      const Expected& e = c.templates[i];
      CAPTURE(i);
      CHECK(t.label == e.label);
      CHECK(t.pods_together == e.pods);
      CHECK(t.pods_source == e.pods_source);
      CHECK(t.procs_field == e.procs);
      CHECK(t.procs_source == e.procs_source);
    }
  }
}

}  // namespace
}  // namespace shmguard
