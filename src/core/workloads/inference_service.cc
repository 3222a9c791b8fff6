// ReadInferenceService. Source: kserve/kserve at aaac4e29 (2026-08-21):
// pkg/apis/serving/v1beta1/predictor.go (PredictorSpec: the framework fields, model, workerSpec,
// an inline PodSpec and ComponentExtensionSpec), inference_service_defaults.go
// (setPredictorModelDefaults: a framework field becomes the model, its name the model format),
// pkg/controller/v1beta1/inferenceservice/components/predictor.go (buildPodSpec,
// buildObjectMeta, multiNodeProcess) and inferenceservice/utils/utils.go
// (MergeServingRuntimeAndInferenceServiceSpecs, MergeRuntimeContainers, MergePodSpec).
#include "core/workloads/internal/inference_service.h"

#include <string>
#include <utility>

#include "core/workloads/internal/kinds.h"
#include "core/workloads/internal/spec_merge.h"

namespace shmguard::workloads {
namespace {

using nlohmann::json;

constexpr std::string_view kServerContainer = "kserve-container";

// The predictor fields KServe turns into a model of that format (setPredictorModelDefaults).
constexpr std::string_view kFrameworks[] = {"sklearn", "tensorflow",  "xgboost", "pytorch",  "triton",
                                            "onnx",    "huggingface", "pmml",    "lightgbm", "paddle"};

// The members of a core/v1 Container: what KServe keeps of a model spec, which inlines one.
constexpr std::string_view kContainerFields[] = {"name",
                                                 "image",
                                                 "command",
                                                 "args",
                                                 "workingDir",
                                                 "ports",
                                                 "envFrom",
                                                 "env",
                                                 "resources",
                                                 "resizePolicy",
                                                 "restartPolicy",
                                                 "volumeMounts",
                                                 "volumeDevices",
                                                 "livenessProbe",
                                                 "readinessProbe",
                                                 "startupProbe",
                                                 "lifecycle",
                                                 "securityContext",
                                                 "imagePullPolicy",
                                                 "stdin",
                                                 "stdinOnce",
                                                 "tty",
                                                 "terminationMessagePath",
                                                 "terminationMessagePolicy"};

// The runtime's pod fields MergePodSpec lays the predictor's over (its hostIPC and the rest of
// ServingRuntimePodSpec do not reach the pod).
constexpr const char* kRuntimePodFields[] = {"nodeSelector",     "affinity",      "tolerations",   "volumes",
                                             "imagePullSecrets", "schedulerName", "resourceClaims"};

// The model's container, as KServe reads it out of a model spec.
json ModelContainer(JsonNode model) {
  json c = json::object();
  for (std::string_view field : kContainerFields) {
    if (JsonNode v = model.Find(field)) c[std::string(field)] = v.Copy();
  }
  c["name"] = kServerContainer;
  return c;
}

// `pod` (a PodSpec with its pod annotations) without the members that are not a pod's.
json PodOf(JsonNode component) {
  json pod = component.Copy();
  for (std::string_view field : kFrameworks) pod.erase(std::string(field));
  for (const char* field : {"model", "workerSpec", "storageUris", "minReplicas", "maxReplicas", "scaleTarget",
                            "scaleMetric", "scaleMetricType", "autoScaling", "containerConcurrency", "timeout",
                            "canaryTrafficPercent", "logger", "batcher", "labels", "deploymentStrategy"}) {
    pod.erase(field);
  }
  return pod;
}

// The runtime's `spec` (or its workerSpec) with `component`'s pod laid over it, as MergePodSpec
// and buildPodSpec do: the runtime's pod fields, the component's over them, and containers:
// the runtime's `server` container with the component's `server` merged over it (args
// appended), then the others of each.
json BuildPod(const json& runtime_spec, const json& pod, const json& server) {
  json out = json::object();
  for (const char* field : kRuntimePodFields) {
    if (runtime_spec.contains(field)) out[field] = runtime_spec[field];
  }
  json without_containers = pod;
  without_containers.erase("containers");
  MergeSpec(out, without_containers);
  const std::string name(ItemName(server));  // ModelContainer names it
  json containers = json::array();
  json merged = json::object();
  const json empty = json::array();
  const json& runtime_containers =
      runtime_spec.contains("containers") && runtime_spec["containers"].is_array() ? runtime_spec["containers"] : empty;
  for (const json& c : runtime_containers) {
    if (c.is_object() && ItemName(c) == name) merged = c;
  }
  json patch = server;
  patch.erase("args");
  MergeSpec(merged, patch);
  json args = json::array();
  for (const json* from : std::initializer_list<const json*>{&merged, &server}) {
    if (from->contains("args") && (*from)["args"].is_array()) {
      for (const json& a : (*from)["args"]) args.push_back(a);
    }
  }
  if (!args.empty()) merged["args"] = args;
  containers.push_back(merged);
  for (const json& c : runtime_containers) {
    if (!c.is_object() || ItemName(c) != name) containers.push_back(c);
  }
  if (pod.contains("containers") && pod["containers"].is_array()) {
    for (const json& c : pod["containers"]) {
      if (!c.is_object() || ItemName(c) != name) containers.push_back(c);
    }
  }
  out["containers"] = containers;
  // The pod's annotations: the runtime's, then the component's (buildObjectMeta's union).
  json annotations = runtime_spec.contains("annotations") ? runtime_spec["annotations"] : json::object();
  if (pod.contains("annotations")) MergeSpec(annotations, pod["annotations"]);
  if (annotations.is_object() && !annotations.empty()) out["annotations"] = annotations;
  return out;
}

// Sets env `name` to `value` on the containers named `container` (AddEnvVarToPodSpec).
void SetEnv(json& pod, std::string_view container, const std::string& name, const std::string& value) {
  for (json& c : pod["containers"]) {
    if (!c.is_object() || ItemName(c) != container) continue;
    MergeSpec(c, {{"env", json::array({{{"name", name}, {"value", value}}})}});
  }
}

// What the predictor says: its model (spec.predictor.model, or the framework field KServe turns
// into one), where it is, its format, and its workers' spec.
struct Predictor {
  JsonNode node, model, worker;
  std::string model_at = "/spec/predictor/model";
  std::string format;
};

Result<Predictor> ReadPredictor(JsonNode object) {
  JsonNode spec = object.Find("spec");
  if (spec && !spec.IsObject()) return TypeError("/spec", "an object");
  Predictor p;
  p.node = spec.Find("predictor");
  if (!p.node) return MakeError(Code::kInvalidInput, "is missing", Location::Pointer("/spec/predictor"));
  if (!p.node.IsObject()) return TypeError("/spec/predictor", "an object");
  p.model = p.node.Find("model");
  p.format = p.model.Find("modelFormat").StringMember("name");
  for (std::string_view field : kFrameworks) {
    if (p.model) break;
    if ((p.model = p.node.Find(field))) {
      p.format = field;
      p.model_at = "/spec/predictor/" + std::string(field);
    }
  }
  if (p.model && !p.model.IsObject()) return TypeError(p.model_at, "an object");
  p.worker = p.node.Find("workerSpec");
  if (p.worker && !p.worker.IsObject()) return TypeError("/spec/predictor/workerSpec", "an object");
  return p;
}

// The runtime KServe would run the model with, if the input holds it, and in words:
// "ServingRuntime vllm", or how KServe would pick it.
struct RuntimeChoice {
  const json* runtime = nullptr;
  std::string text;
};

RuntimeChoice ChooseRuntime(const Predictor& p, const RuntimeCatalog* runtimes, const std::string& namespace_name) {
  RuntimeChoice c;
  if (!p.model) return c;
  const std::string name(p.model.StringMember("runtime"));
  const std::string version(p.model.Find("modelFormat").StringMember("version"));
  c.runtime = runtimes ? runtimes->FindServing(namespace_name, name, p.format, version, bool(p.worker)) : nullptr;
  if (c.runtime) {
    const JsonNode r(*c.runtime);
    c.text = std::string(r.StringMember("kind")) + " " + std::string(r.Find("metadata").StringMember("name"));
  } else if (!name.empty()) {
    c.text = "the runtime " + name;
  } else {
    c.text = "the runtime KServe selects for model format " + (p.format.empty() ? "(none)" : p.format);
  }
  return c;
}

// The workers of a multi-node predictor into `built_spec` as spec.workerSpec: the runtime's
// workerSpec under the predictor's. The sizes: the InferenceService's over the runtime's, 1 by
// default; the head learns them from env (multiNodeProcess).
void AddWorkers(const Predictor& p, const json& runtime_spec, json& built_spec) {
  static const json kNone = json::object();
  const json& runtime_worker = runtime_spec.contains("workerSpec") && runtime_spec["workerSpec"].is_object()
                                   ? runtime_spec["workerSpec"]
                                   : kNone;
  json built_worker = runtime_worker;
  MergeSpec(built_worker, p.worker ? PodOf(p.worker) : json::object());
  for (const auto& [field, env] : {std::pair{"pipelineParallelSize", "PIPELINE_PARALLEL_SIZE"},
                                   std::pair{"tensorParallelSize", "TENSOR_PARALLEL_SIZE"}}) {
    JsonNode size = p.worker.Find(field);
    json value = size.IsInteger()                                                              ? json(size.Integer())
                 : runtime_worker.contains(field) && runtime_worker[field].is_number_integer() ? runtime_worker[field]
                                                                                               : json(1);
    built_worker[field] = value;
    if (p.model) SetEnv(built_spec, kServerContainer, env, std::to_string(value.get<int64_t>()));
  }
  built_spec["workerSpec"] = built_worker;
}

}  // namespace

Result<Workload> ReadInferenceService(JsonNode object, const RuntimeCatalog* runtimes, Workload w) {
  auto predictor = ReadPredictor(object);
  if (!predictor) return predictor.error();
  const Predictor& p = *predictor;
  const RuntimeChoice choice = ChooseRuntime(p, runtimes, w.namespace_name);
  const json none = json::object();
  const json& runtime_spec =
      choice.runtime && choice.runtime->contains("spec") && choice.runtime->at("spec").is_object()
          ? choice.runtime->at("spec")
          : none;

  // The predictor's pod, and the workers' of a multi-node predictor, as a ServingRuntime the
  // table reads: spec and spec.workerSpec.
  json built_spec = p.model ? BuildPod(runtime_spec, PodOf(p.node), ModelContainer(p.model)) : PodOf(p.node);
  if (p.worker || runtime_spec.contains("workerSpec")) AddWorkers(p, runtime_spec, built_spec);
  auto built = std::make_shared<json>(json{{"apiVersion", "serving.kserve.io/v1alpha1"},
                                           {"kind", "ServingRuntime"},
                                           {"metadata", {{"namespace", w.namespace_name}, {"name", w.name}}},
                                           {"spec", std::move(built_spec)}});
  if (JsonNode annotations = object.Find("metadata").Find("annotations")) {
    (*built)["metadata"]["annotations"] = annotations.Copy();
  }
  w.built = built;
  auto inner = FindPodTemplates(*w.built);
  if (!inner) {
    Error e = inner.error();
    e.message =
        "in the predictor as KServe builds it" + (choice.runtime ? " from " + choice.text : "") + ": " + e.message;
    return e;
  }
  for (PodTemplate& t : inner->templates) {
    const bool is_worker = t.label == "worker";
    t.label = is_worker ? "predictor worker" : "predictor";
    if (choice.runtime) t.label += " (" + choice.text + ")";
    t.spec_pointer = is_worker ? "/spec/predictor/workerSpec" : "/spec/predictor";
    t.metadata_pointer = "/spec/predictor";
    if (p.model && !choice.runtime) t.shm_unknown = choice.text + " is not in the input";
  }
  w.templates = std::move(inner->templates);
  if (p.model) {
    w.findings.push_back(
        Finding(Check::kServingRuntime, p.model_at).Val("runtime", choice.text).Num("found", choice.runtime ? 1 : 0));
  }
  return w;
}

}  // namespace shmguard::workloads
