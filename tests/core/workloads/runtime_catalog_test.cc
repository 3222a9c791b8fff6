// RuntimeCatalog: the Trainer and KServe runtimes of an input, found as a TrainJob and a predictor
// find theirs — by name in the namespace, else cluster-wide; or, for a predictor without one, the
// runtime KServe auto-selects for its model format.
#include <catch2/catch.hpp>

#include "core/workloads/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

json Runtime(const std::string& kind, const std::string& ns, const std::string& name, const std::string& spec = "{}") {
  const bool serving = kind.find("Serving") != std::string::npos;
  json r = test::Yaml("spec: " + spec);
  r["apiVersion"] = serving ? "serving.kserve.io/v1alpha1" : "trainer.kubeflow.org/v1alpha1";
  r["kind"] = kind;
  r["metadata"]["name"] = name;
  if (!ns.empty()) r["metadata"]["namespace"] = ns;
  return r;
}

std::string NameOf(const json* r) { return r ? r->at("metadata").at("name").get<std::string>() : "(none)"; }

TEST_CASE("RuntimeCatalog keeps the four runtime kinds, a namespaced one for its namespace only", "[runtime_catalog]") {
  RuntimeCatalog c;
  CHECK(c.empty());
  c.Add(Runtime("TrainingRuntime", "team-a", "torch"));
  c.Add(Runtime("ClusterTrainingRuntime", "", "torch-gpu"));
  json other = Runtime("TrainingRuntime", "team-a", "old");
  other["apiVersion"] = "kubeflow.org/v1";  // another API's kind of that name: not a runtime
  c.Add(other);
  c.Add(test::Yaml("{apiVersion: v1, kind: ConfigMap, metadata: {name: torch, namespace: team-a}}"));
  CHECK(NameOf(c.Find("TrainingRuntime", "team-a", "torch")) == "torch");
  CHECK(c.Find("TrainingRuntime", "team-b", "torch") == nullptr);
  CHECK(NameOf(c.Find("ClusterTrainingRuntime", "any", "torch-gpu")) == "torch-gpu");
  CHECK(c.Find("TrainingRuntime", "team-a", "old") == nullptr);
  // The same key again: the later one replaces it.
  c.Add(Runtime("TrainingRuntime", "team-a", "torch", "{mlPolicy: {numNodes: 4}}"));
  CHECK(c.Find("TrainingRuntime", "team-a", "torch")->at("spec").at("mlPolicy").at("numNodes") == 4);
}

TEST_CASE("RuntimeCatalog picks a predictor's runtime as KServe does", "[runtime_catalog]") {
  RuntimeCatalog c;
  const std::string vllm_format = "{supportedModelFormats: [{name: huggingface, autoSelect: true, priority: 1}]}";
  c.Add(Runtime("ClusterServingRuntime", "", "kserve-huggingfaceserver", vllm_format));
  c.Add(Runtime("ClusterServingRuntime", "", "hf-high",
                "{supportedModelFormats: [{name: huggingface, autoSelect: true, priority: 2}]}"));
  c.Add(Runtime("ClusterServingRuntime", "", "hf-multinode",
                "{workerSpec: {}, supportedModelFormats: [{name: huggingface, autoSelect: true, priority: 9}]}"));
  c.Add(Runtime("ServingRuntime", "ml", "disabled",
                "{disabled: true, supportedModelFormats: [{name: huggingface, autoSelect: true, priority: 99}]}"));
  c.Add(Runtime("ServingRuntime", "ml", "not-auto", "{supportedModelFormats: [{name: huggingface, priority: 50}]}"));
  c.Add(Runtime("ServingRuntime", "ml", "onnx",
                "{supportedModelFormats: [{name: onnx, version: '1', autoSelect: true}]}"));

  // By name: the namespace's, else the cluster's.
  CHECK(NameOf(c.FindServing("ml", "onnx", "", "", false)) == "onnx");
  CHECK(NameOf(c.FindServing("ml", "hf-high", "", "", false)) == "hf-high");
  CHECK(c.FindServing("ml", "missing", "", "", false) == nullptr);
  // Auto-selected: not disabled, autoSelect set, the highest priority; cluster-wide after the
  // namespace's; a multi-node predictor only by a runtime with a workerSpec.
  CHECK(NameOf(c.FindServing("ml", "", "huggingface", "", false)) == "hf-high");
  CHECK(NameOf(c.FindServing("ml", "", "huggingface", "", true)) == "hf-multinode");
  CHECK(NameOf(c.FindServing("ml", "", "onnx", "1", false)) == "onnx");
  CHECK(c.FindServing("ml", "", "onnx", "2", false) == nullptr);
  CHECK(c.FindServing("other", "", "onnx", "", false) == nullptr);  // the namespace's runtime only
  CHECK(c.FindServing("ml", "", "tensorflow", "", false) == nullptr);
}

}  // namespace
}  // namespace shmguard
