// A TrainJob read alone and with its runtime: which pods it stands for, their processes, nodes
// and /dev/shm, and that it is never patched.
#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

// A torch runtime as Kubeflow Trainer ships it: the trainer step "node", one node, no /dev/shm.
const char* kRuntime = R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template: {spec: {template: {spec: {containers: [{name: dataset-initializer, image: init}]}}}}
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec: {template: {spec: {containers: [{name: node, image: pytorch, env: [{name: A, value: "1"}]}]}}}
)";

const char* kTrainJob = R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llm, namespace: team-a, annotations: {shmguard.io/num-workers: "8"}}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 3
    numProcPerNode: 4
    resourcesPerNode: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}
)";

TEST_CASE("A TrainJob with its runtime is that runtime's pods with the TrainJob's trainer settings", "[train_job]") {
  json runtime = test::Yaml(kRuntime), job = test::Yaml(kTrainJob);
  RuntimeCatalog runtimes;
  runtimes.Add(runtime);
  auto w = FindPodTemplates(job, &runtimes);
  INFO((w ? "" : w.error().ToString()));
  REQUIRE(w.has_value());
  REQUIRE(w->templates.size() == 2);
  const PodTemplate& node = w->templates[1];
  CHECK(node.label == "replicatedJob node");
  CHECK(node.spec_pointer == "/spec/trainer");
  CHECK(node.pods_together == 3);
  CHECK(node.pods_source == "3 nodes (TrainJob spec.trainer.numNodes)");
  CHECK(node.procs_field == "4");
  CHECK_FALSE(node.patchable);
  auto facts = ReadPodFacts(node, Policy{});
  REQUIRE(facts.has_value());
  CHECK(facts->gpus == 4);  // resourcesPerNode replaced the container's resources
  CHECK(facts->memory_limit_bytes == 64LL << 30);
  CHECK(facts->procs_source == "TrainJob spec.trainer.numProcPerNode 4");
  CHECK(w->templates[0].label == "replicatedJob dataset-initializer (ClusterTrainingRuntime torch-distributed)");

  Evaluation ev = Evaluate(job, Policy{}, {.runtimes = &runtimes});
  CHECK(ev.verdict == Verdict::kOk);  // 64Mi today, but its pods are patched when created
  CHECK(ev.patch.empty());
  REQUIRE(ev.pods.size() == 2);
  CHECK(ev.pods[1].current_shm == "64Mi (container default)");
  CHECK(ev.pods[1].estimated);  // the TrainJob's own annotations are not used...
  CHECK(ev.pods[1].findings.back().check == Check::kShmPatchedAtCreation);
  // ...and it says so, and where they belong.
  CHECK(test::Ids(ev.findings) == std::vector<std::string>{"trainjob-annotations-ignored", "trainjob-runtime"});
  const Finding* ignored = test::FindingOf(ev.findings, Check::kTrainjobAnnotationsIgnored);
  REQUIRE(ignored != nullptr);
  CHECK(ignored->severity == Severity::kWarning);
  CHECK(ignored->pointer == "/metadata/annotations/shmguard.io~1num-workers");
  CHECK(ignored->Value("annotations") == "shmguard.io/num-workers");
  CHECK(ignored->Value("api") == "runtimePatches");  // where this Trainer version puts pod metadata
  const Finding& read = ev.findings[1];
  CHECK(read.Number("found") == 1);
  CHECK(read.Value("runtime") == "ClusterTrainingRuntime torch-distributed");
  // A namespaced runtime is only found in the TrainJob's namespace.
  RuntimeCatalog elsewhere;
  elsewhere.Add(test::Yaml(R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: torch-distributed, namespace: team-b}
spec: {template: {spec: {replicatedJobs: []}}}
)"));
  CHECK(elsewhere.Find("TrainingRuntime", "team-a", "torch-distributed") == nullptr);
  CHECK(elsewhere.Find("TrainingRuntime", "team-b", "torch-distributed") != nullptr);
}

TEST_CASE("A TrainJob alone is read from what it states, its runtime's /dev/shm unknown", "[train_job]") {
  json job = test::Yaml(R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: sft}
spec:
  runtimeRef: {name: mpi-runtime}
  trainer:
    numNodes: 2
    resourcesPerNode: {limits: {nvidia.com/gpu: 2, memory: 40Gi}}
  runtimePatches:
  - manager: me
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: launcher
            template: {spec: {template: {spec: {containers: [{name: node}]}}}}
          - name: node
            template:
              spec:
                template:
                  metadata: {annotations: {shmguard.io/num-workers: "2", shmguard.io/batch-bytes: 256Mi}}
                  spec:
                    containers: [{name: node, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
                    volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]
)");
  Evaluation ev = Evaluate(job, Policy{});
  REQUIRE(ev.pods.size() == 2);
  CHECK(ev.pods[0].label == "replicatedJob node");
  CHECK(ev.pods[0].path == "/spec/trainer");
  CHECK(ev.pods[0].current_shm == "emptyDir Memory 2Gi");  // the patch's volume, on the trainer's container
  REQUIRE(ev.pods[0].plan.has_value());                    // the patch's annotations reach the pods
  CHECK_FALSE(ev.pods[0].estimated);
  CHECK(ev.pods[1].label == "replicatedJob launcher");
  CHECK(ev.pods[1].path ==
        "/spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs/0/template/spec/template/spec");
  CHECK(ev.pods[1].current_shm == "unknown (ClusterTrainingRuntime mpi-runtime is not in the input)");
  CHECK(ev.patch.empty());
  CHECK(test::Ids(ev.findings) == std::vector<std::string>{"trainjob-runtime"});
  CHECK(ev.findings[0].Number("found") == 0);
  CHECK(ev.findings[0].Value("runtime") == "ClusterTrainingRuntime mpi-runtime");

  // Too big for the memory limit is a denial either way.
  json big = job;
  big["spec"]["trainer"]["resourcesPerNode"]["limits"]["memory"] = "4Gi";
  CHECK(Evaluate(big, Policy{}).verdict == Verdict::kDeny);
}

TEST_CASE("A Trainer v2.1 TrainJob's podTemplateOverrides and v2.0 podSpecOverrides reach the targeted jobs",
          "[train_job]") {
  RuntimeCatalog runtimes;
  runtimes.Add(test::Yaml(kRuntime));
  for (const char* overrides :
       {"podTemplateOverrides: [{targetJobs: [{name: node}], spec: {volumes: [{name: dshm, emptyDir: {medium: "
        "Memory}}], "
        "containers: [{name: node, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]}}]",
        "podSpecOverrides: [{targetJobs: [{name: node}], volumes: [{name: dshm, emptyDir: {medium: Memory}}], "
        "containers: [{name: node, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]}]"}) {
    CAPTURE(overrides);
    json job =
        test::Yaml(std::string("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: j}\n"
                               "spec:\n  runtimeRef: {name: torch-distributed}\n"
                               "  trainer: {resourcesPerNode: {limits: {nvidia.com/gpu: 1, memory: 16Gi}}}\n  ") +
                   overrides + "\n");
    Evaluation ev = Evaluate(job, Policy{}, {.runtimes = &runtimes});
    REQUIRE(ev.pods.size() == 2);
    CHECK(ev.pods[1].current_shm == "emptyDir Memory without sizeLimit");
    CHECK(ev.verdict == Verdict::kOk);
  }
}

}  // namespace
}  // namespace shmguard
