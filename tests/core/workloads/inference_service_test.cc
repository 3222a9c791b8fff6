// KServe's kinds: a ServingRuntime read alone, and an InferenceService read with and without
// the runtime KServe would give it — which pods it stands for, their server, processes and
// /dev/shm, and that none is ever patched. The LLMInferenceService: llm_inference_service_test.cc.
#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

// A vLLM runtime as KServe's own vllmserver is written: the server's command, 1Gi of /dev/shm
// of its own, hostIPC (which KServe does not carry to the pod), no GPUs.
const char* kRuntime = R"(apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm, namespace: serving}
spec:
  annotations: {shmguard.io/ignore: memory-headroom}
  supportedModelFormats: [{name: vLLM, autoSelect: true}]
  hostIPC: true
  containers:
  - name: kserve-container
    image: vllm/vllm-openai
    command: [python, -m, vllm.entrypoints.openai.api_server]
    args: [--port=8080]
    env: [{name: HF_HOME, value: /tmp}]
    resources: {requests: {cpu: "1", memory: 8Gi}, limits: {memory: 8Gi}}
    volumeMounts: [{name: devshm, mountPath: /dev/shm}]
  - name: sidecar
    image: proxy
  volumes: [{name: devshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
)";

const char* kService = R"(apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: qwen, namespace: serving}
spec:
  predictor:
    model:
      modelFormat: {name: vLLM}
      args: [--tensor-parallel-size=4]
      env: [{name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: "32"}]
      resources: {limits: {nvidia.com/gpu: "4", memory: 128Gi}}
)";

// The Deployment KServe's RawDeployment mode makes of kService with kRuntime (predictor.go,
// buildPodSpec), written out.
const char* kPredictor = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen-predictor, namespace: serving}
spec:
  template:
    metadata: {annotations: {shmguard.io/ignore: memory-headroom}}
    spec:
      containers:
      - name: kserve-container
        image: vllm/vllm-openai
        command: [python, -m, vllm.entrypoints.openai.api_server]
        args: [--port=8080, --tensor-parallel-size=4]
        env: [{name: HF_HOME, value: /tmp}, {name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: "32"}]
        resources: {requests: {cpu: "1", memory: 8Gi}, limits: {memory: 128Gi, nvidia.com/gpu: "4"}}
        volumeMounts: [{name: devshm, mountPath: /dev/shm}]
      - name: sidecar
        image: proxy
      volumes: [{name: devshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
)";

TEST_CASE("A ServingRuntime is the pod and workers KServe builds from it, evaluated and never patched",
          "[inference_service]") {
  json runtime = test::Yaml(R"(apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: multinode}
spec:
  annotations: {shmguard.io/procs-per-pod: "2"}
  containers: [{name: kserve-container, image: s, resources: {limits: {nvidia.com/gpu: 2}}}]
  workerSpec:
    pipelineParallelSize: 3
    containers: [{name: worker-container, image: s, resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  auto w = FindPodTemplates(runtime);
  REQUIRE(w.has_value());
  CHECK(w->cluster_scoped);
  REQUIRE(w->templates.size() == 2);
  for (const PodTemplate& t : w->templates) {
    CAPTURE(t.label);
    CHECK_FALSE(t.patchable);
    CHECK(t.pods_patched_at_creation);
    CHECK(t.pods_together == 3);  // the head and pipelineParallelSize - 1 workers
    CHECK(t.pods_source == "3 pods (head ×1, workers ×2 (workerSpec.pipelineParallelSize))");
  }
  CHECK(w->templates[0].label == "runtime");
  CHECK(w->templates[0].spec_pointer == "/spec");
  CHECK(w->templates[1].spec_pointer == "/spec/workerSpec");
  // The pod annotations a runtime gives are in its spec.
  CHECK(w->templates[0].annotations.count("shmguard.io/procs-per-pod") == 1);
  CHECK(w->templates[0].AnnotationPointer("shmguard.io/procs-per-pod") ==
        "/spec/annotations/shmguard.io~1procs-per-pod");
  Evaluation ev = Evaluate(runtime, Policy{}, {});
  CHECK(ev.verdict == Verdict::kOk);
  CHECK(ev.patch.empty());
}

TEST_CASE("An InferenceService with its runtime is judged as the Deployment KServe builds from both",
          "[inference_service]") {
  json runtime = test::Yaml(kRuntime), service = test::Yaml(kService), predictor = test::Yaml(kPredictor);
  RuntimeCatalog runtimes;
  runtimes.Add(runtime);
  auto w = FindPodTemplates(service, &runtimes);
  INFO((w ? "" : w.error().ToString()));
  REQUIRE(w.has_value());
  REQUIRE(w->templates.size() == 1);
  const PodTemplate& t = w->templates[0];
  CHECK(t.label == "predictor (ServingRuntime vllm)");
  CHECK(t.spec_pointer == "/spec/predictor");
  CHECK_FALSE(t.patchable);
  CHECK(t.shm_unknown.empty());
  auto facts = ReadPodFacts(t, Policy{});
  REQUIRE(facts.has_value());
  CHECK(facts->gpus == 4);
  REQUIRE(facts->containers.size() == 2);                   // the server, then the runtime's sidecar
  CHECK(facts->containers[0].memory_limit == 128LL << 30);  // the model's limit over the runtime's
  CHECK_FALSE(facts->host_ipc);                             // MergePodSpec does not carry the runtime's
  const json built = t.spec.Copy();
  CHECK(built["containers"][0]["args"] == json::array({"--port=8080", "--tensor-parallel-size=4"}));
  CHECK(built["containers"][0]["env"].size() == 2);
  CHECK(built["containers"][1]["name"] == "sidecar");

  Evaluation ev = Evaluate(service, Policy{}, {.runtimes = &runtimes});
  Evaluation deployment = Evaluate(predictor, Policy{}, {});
  REQUIRE(ev.pods.size() == 1);
  REQUIRE(deployment.pods.size() == 1);
  CHECK(ev.pods[0].required_bytes == deployment.pods[0].required_bytes);
  CHECK(ev.pods[0].required_bytes > 1LL << 30);  // more than the runtime's 1Gi: 32 MiB chunks
  CHECK(ev.pods[0].current_shm == deployment.pods[0].current_shm);
  CHECK(deployment.verdict == Verdict::kPatch);
  CHECK(ev.verdict == Verdict::kOk);  // KServe's pods are patched when they are created
  CHECK(ev.patch.empty());
  CHECK(test::Ids(ev.findings) == std::vector<std::string>{"serving-runtime"});
  CHECK(test::FindingOf(ev.pods[0].findings, Check::kSizedFromServerLaunch) != nullptr);
  CHECK(test::FindingOf(ev.pods[0].findings, Check::kShmPatchedAtCreation) != nullptr);
  CHECK(test::FindingOf(ev.pods[0].findings, Check::kMemoryHeadroom) == nullptr);  // the runtime's ignore
}

TEST_CASE("An InferenceService without its runtime says what the runtime would decide", "[inference_service]") {
  json service = test::Yaml(kService);
  Evaluation ev = Evaluate(service, Policy{}, {});
  REQUIRE(ev.pods.size() == 1);
  CHECK(ev.verdict == Verdict::kOk);
  CHECK(ev.pods[0].estimated);  // no server command without the runtime
  CHECK(ev.pods[0].current_shm == "unknown (the runtime KServe selects for model format vLLM is not in the input)");
  const Finding* read = test::FindingOf(ev.findings, Check::kServingRuntime);
  REQUIRE(read != nullptr);
  CHECK(read->pointer == "/spec/predictor/model");
  CHECK(read->Number("found") == 0);
}

TEST_CASE("A framework field is the model of that format, and a custom predictor is its own pod",
          "[inference_service]") {
  json hf = test::Yaml(R"(apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: hf}
spec:
  predictor:
    huggingface:
      args: [--tensor-parallel-size=2]
      resources: {limits: {nvidia.com/gpu: 2}}
)");
  Evaluation ev = Evaluate(hf, Policy{}, {});
  const Finding* read = test::FindingOf(ev.findings, Check::kServingRuntime);
  REQUIRE(read != nullptr);
  CHECK(read->pointer == "/spec/predictor/huggingface");
  CHECK(read->Value("runtime") == "the runtime KServe selects for model format huggingface");

  json custom = test::Yaml(R"(apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: custom}
spec:
  predictor:
    containers:
    - name: kserve-container
      image: vllm/vllm-openai
      command: [vllm, serve, m, --tensor-parallel-size, "2"]
      resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
)");
  auto w = FindPodTemplates(custom);
  REQUIRE(w.has_value());
  REQUIRE(w->templates.size() == 1);
  CHECK(w->templates[0].shm_unknown.empty());
  Evaluation own = Evaluate(custom, Policy{}, {});
  CHECK(own.findings.empty());  // no runtime is read
  REQUIRE(own.pods.size() == 1);
  CHECK(test::FindingOf(own.pods[0].findings, Check::kSizedFromServerLaunch) != nullptr);
  CHECK(own.pods[0].current_shm == "64Mi (container default)");
}

TEST_CASE("A multi-node InferenceService has a head and pipelineParallelSize - 1 workers, the head told the sizes",
          "[inference_service]") {
  json runtime = test::Yaml(R"y(apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: hf-multinode}
spec:
  supportedModelFormats: [{name: huggingface, autoSelect: true}]
  containers: [{name: kserve-container, image: s, command: [sh, -c, "vllm serve m --tensor-parallel-size $(TENSOR_PARALLEL_SIZE)"]}]
  workerSpec:
    tensorParallelSize: 1
    containers: [{name: worker-container, image: s, command: [ray, start, --block]}]
)y");
  json service = test::Yaml(R"(apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: big, namespace: serving}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      resources: {limits: {nvidia.com/gpu: 4}}
    workerSpec:
      pipelineParallelSize: 2
      tensorParallelSize: 4
      containers: [{name: worker-container, resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  RuntimeCatalog runtimes;
  runtimes.Add(runtime);
  auto w = FindPodTemplates(service, &runtimes);
  INFO((w ? "" : w.error().ToString()));
  REQUIRE(w.has_value());
  REQUIRE(w->templates.size() == 2);
  CHECK(w->templates[1].label == "predictor worker (ClusterServingRuntime hf-multinode)");
  CHECK(w->templates[1].spec_pointer == "/spec/predictor/workerSpec");
  for (const PodTemplate& t : w->templates) CHECK(t.pods_together == 2);
  auto facts = ReadPodFacts(w->templates[0], Policy{});
  REQUIRE(facts.has_value());
  REQUIRE(facts->server.has_value());
  CHECK(facts->server->tensor_parallel == 4);  // $(TENSOR_PARALLEL_SIZE), set by KServe
}

TEST_CASE("KServe's runtime for a predictor: named, else auto-selected as KServe picks it", "[inference_service]") {
  auto runtime = [](const char* kind, const char* ns, const char* name, const char* formats, bool worker = false) {
    json r = test::Yaml(std::string("apiVersion: serving.kserve.io/v1alpha1\nkind: ") + kind +
                        "\nmetadata: {name: " + name + (*ns ? std::string(", namespace: ") + ns : "") +
                        "}\nspec: {supportedModelFormats: " + formats + ", containers: [{name: kserve-container}]}");
    if (worker) r["spec"]["workerSpec"] = json::object();
    return r;
  };
  RuntimeCatalog c;
  c.Add(runtime("ClusterServingRuntime", "", "cluster-high", "[{name: vLLM, autoSelect: true, priority: 9}]"));
  c.Add(runtime("ServingRuntime", "a", "plain", "[{name: vLLM, autoSelect: true}]"));
  c.Add(runtime("ServingRuntime", "a", "high", "[{name: vLLM, autoSelect: true, priority: 2}]"));
  c.Add(runtime("ServingRuntime", "a", "higher-not-auto", "[{name: vLLM, priority: 5}]"));
  c.Add(runtime("ServingRuntime", "a", "multi", "[{name: vLLM, autoSelect: true, priority: 7}]", true));
  c.Add(runtime("ServingRuntime", "a", "versioned", "[{name: vLLM, version: '2', autoSelect: true}]"));
  c.Add(runtime("ServingRuntime", "b", "cluster-high", "[{name: other}]"));
  auto name = [](const json* r) { return r ? (*r)["metadata"].value("name", "") : std::string("(none)"); };
  const struct {
    const char *ns, *named, *format, *version;
    bool multi;
    std::string want;
  } cases[] = {
      {"a", "", "vLLM", "", false, "high"},          // a stated priority, the highest that auto-selects
      {"a", "", "vLLM", "", true, "multi"},          // multi-node wants a workerSpec
      {"a", "", "vLLM", "2", false, "versioned"},    // a version wants a runtime that lists it
      {"c", "", "vLLM", "", false, "cluster-high"},  // none in the namespace: the cluster's
      {"a", "", "onnx", "", false, "(none)"},
      {"a", "higher-not-auto", "vLLM", "", false, "higher-not-auto"},  // named: auto-select does not matter
      {"b", "cluster-high", "vLLM", "", false, "cluster-high"},        // the namespace's own first
      {"c", "cluster-high", "vLLM", "", false, "cluster-high"},
  };
  for (const auto& k : cases) {
    CAPTURE(k.ns, k.named, k.format, k.version, k.multi);
    const json* got = c.FindServing(k.ns, k.named, k.format, k.version, k.multi);
    CHECK(name(got) == k.want);
  }
  CHECK((*c.FindServing("b", "cluster-high", "vLLM", "", false))["kind"] == "ServingRuntime");
  CHECK((*c.FindServing("c", "cluster-high", "vLLM", "", false))["kind"] == "ClusterServingRuntime");
}

// A runtime is another object of the input, read for what it gives: its fields of the wrong
// type are read as absent, never thrown on (a number for a name, a string for a flag).
TEST_CASE("A runtime's fields of the wrong type are read as absent", "[inference_service]") {
  RuntimeCatalog runtimes;
  runtimes.Add(test::Yaml(R"(apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: r, namespace: s}
spec:
  disabled: "yes"
  supportedModelFormats: [{name: vLLM, autoSelect: "true", priority: high}, 7]
  containers: [{name: 5}, kserve-container]
  workerSpec: 3
)"));
  runtimes.Add(test::Yaml(R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: t}
spec: {template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: 5}]}}}}}]}}}
)"));
  json named = test::Yaml(R"(apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: i, namespace: s}
spec: {predictor: {model: {modelFormat: {name: vLLM}, runtime: r, args: [--tensor-parallel-size=2]}}}
)");
  CHECK(runtimes.FindServing("s", "", "vLLM", "", false) == nullptr);  // "true" is not true
  Evaluation ev = Evaluate(named, Policy{}, {.runtimes = &runtimes});
  CHECK(ev.workload);
  CHECK(test::FindingOf(ev.findings, Check::kServingRuntime)->Number("found") == 1);
  json job = test::Yaml(R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: j}
spec: {runtimeRef: {name: t}, trainer: {numNodes: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}}}
)");
  CHECK(Evaluate(job, Policy{}, {.runtimes = &runtimes}).workload);
}

TEST_CASE("A malformed InferenceService is an error naming the field", "[inference_service]") {
  const struct {
    const char* spec;
    std::string pointer;
  } cases[] = {
      {"{}", "/spec/predictor"},
      {"{predictor: []}", "/spec/predictor"},
      {"{predictor: {model: 3}}", "/spec/predictor/model"},
      {"{predictor: {huggingface: x}}", "/spec/predictor/huggingface"},
      {"{predictor: {model: {}, workerSpec: 1}}", "/spec/predictor/workerSpec"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.spec);
    json service = test::Yaml(std::string("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                                          "metadata: {name: x}\nspec: ") +
                              c.spec);
    auto w = FindPodTemplates(service);
    REQUIRE_FALSE(w.has_value());
    CHECK(w.error().where.pointer == c.pointer);
  }
}

}  // namespace
}  // namespace shmguard
