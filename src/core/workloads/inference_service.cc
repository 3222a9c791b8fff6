// ReadInferenceService. Source: kserve/kserve at aaac4e29 (2026-08-21):
// pkg/apis/serving/v1beta1/predictor.go (PredictorSpec: the framework fields, model, workerSpec,
// an inline PodSpec and ComponentExtensionSpec), inference_service_defaults.go
// (setPredictorModelDefaults: a framework field becomes the model, its name the model format),
// pkg/controller/v1beta1/inferenceservice/components/predictor.go (buildPodSpec,
// buildObjectMeta, multiNodeProcess) and inferenceservice/utils/utils.go
// (MergeServingRuntimeAndInferenceServiceSpecs, MergeRuntimeContainers, MergePodSpec).
#include "inference_service.h"

#include <string>
#include <utility>

#include "kinds.h"
#include "spec_merge.h"

namespace shmguard {
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

}  // namespace

Result<Workload> ReadInferenceService(JsonNode object, const RuntimeCatalog* runtimes, Workload w) {
  JsonNode spec = object.Find("spec");
  if (spec && !spec.IsObject()) return TypeError("/spec", "an object");
  JsonNode predictor = spec.Find("predictor");
  if (!predictor) return MakeError(Code::kInvalidInput, "is missing", Location::Pointer("/spec/predictor"));
  if (!predictor.IsObject()) return TypeError("/spec/predictor", "an object");
  // The model: spec.predictor.model, or the framework field KServe turns into one.
  JsonNode model = predictor.Find("model");
  std::string model_at = "/spec/predictor/model";
  std::string format(model.Find("modelFormat").StringMember("name"));
  for (std::string_view field : kFrameworks) {
    if (model) break;
    if ((model = predictor.Find(field))) {
      format = field;
      model_at = "/spec/predictor/" + std::string(field);
    }
  }
  if (model && !model.IsObject()) return TypeError(model_at, "an object");
  JsonNode worker = predictor.Find("workerSpec");
  if (worker && !worker.IsObject()) return TypeError("/spec/predictor/workerSpec", "an object");
  const std::string runtime_name(model.StringMember("runtime"));
  const std::string version(model.Find("modelFormat").StringMember("version"));

  const json* runtime = nullptr;
  std::string runtime_text;  // "ServingRuntime vllm", or how KServe would pick it
  if (model) {
    runtime = runtimes ? runtimes->FindServing(w.namespace_name, runtime_name, format, version, bool(worker)) : nullptr;
    if (runtime) {
      const JsonNode r(*runtime);
      runtime_text = std::string(r.StringMember("kind")) + " " + std::string(r.Find("metadata").StringMember("name"));
    } else if (!runtime_name.empty()) {
      runtime_text = "the runtime " + runtime_name;
    } else {
      runtime_text = "the runtime KServe selects for model format " + (format.empty() ? "(none)" : format);
    }
  }
  const json none = json::object();
  const json& runtime_spec =
      runtime && runtime->contains("spec") && runtime->at("spec").is_object() ? runtime->at("spec") : none;

  // The predictor's pod, and the workers' of a multi-node predictor, as a ServingRuntime the
  // table reads: spec and spec.workerSpec.
  json built_spec = model ? BuildPod(runtime_spec, PodOf(predictor), ModelContainer(model)) : PodOf(predictor);
  if (worker || runtime_spec.contains("workerSpec")) {
    const json& runtime_worker = runtime_spec.contains("workerSpec") && runtime_spec["workerSpec"].is_object()
                                     ? runtime_spec["workerSpec"]
                                     : none;
    json worker_pod = worker ? PodOf(worker) : json::object();
    json built_worker = runtime_worker;
    MergeSpec(built_worker, worker_pod);
    // The sizes: the InferenceService's over the runtime's, 1 by default; the head learns
    // them from env (multiNodeProcess).
    for (const auto& [field, env] : {std::pair{"pipelineParallelSize", "PIPELINE_PARALLEL_SIZE"},
                                     std::pair{"tensorParallelSize", "TENSOR_PARALLEL_SIZE"}}) {
      JsonNode size = worker.Find(field);
      json value = size.IsInteger()                                                              ? json(size.Integer())
                   : runtime_worker.contains(field) && runtime_worker[field].is_number_integer() ? runtime_worker[field]
                                                                                                 : json(1);
      built_worker[field] = value;
      if (model) SetEnv(built_spec, kServerContainer, env, std::to_string(value.get<int64_t>()));
    }
    built_spec["workerSpec"] = built_worker;
  }
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
    e.message = "in the predictor as KServe builds it" + (runtime ? " from " + runtime_text : "") + ": " + e.message;
    return e;
  }
  for (PodTemplate& t : inner->templates) {
    const bool is_worker = t.label == "worker";
    t.label = is_worker ? "predictor worker" : "predictor";
    if (runtime) t.label += " (" + runtime_text + ")";
    t.spec_pointer = is_worker ? "/spec/predictor/workerSpec" : "/spec/predictor";
    t.metadata_pointer = "/spec/predictor";
    if (model && !runtime) t.shm_unknown = runtime_text + " is not in the input";
  }
  w.templates = std::move(inner->templates);
  if (model) {
    w.findings.push_back(
        Finding(Check::kServingRuntime, model_at).Val("runtime", runtime_text).Num("found", runtime ? 1 : 0));
  }
  return w;
}

}  // namespace shmguard
