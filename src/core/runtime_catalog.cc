// RuntimeCatalog: the runtimes an input declares. Sources: kubeflow/trainer
// pkg/apis/trainer/v1alpha1 (TrainingRuntime, ClusterTrainingRuntime); kserve/kserve
// pkg/apis/serving/v1alpha1/servingruntime_types.go and pkg/apis/serving/v1beta1/predictor_model.go
// (GetSupportingRuntimes, RuntimeSupportsModel, sortSupportedRuntimeByPriority).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "shmguard/pod_templates.h"

namespace shmguard {
namespace {

using nlohmann::json;

bool ClusterScoped(std::string_view kind) {
  return kind == "ClusterTrainingRuntime" || kind == "ClusterServingRuntime";
}

std::string RuntimeKey(std::string_view kind, std::string_view namespace_name, std::string_view name) {
  std::string key(kind);
  key += '/';
  if (!ClusterScoped(kind)) key.append(namespace_name).append("/");
  return key.append(name);
}

// The priority `runtime` gives `format` when it auto-selects it (at `version`, when given):
// nullopt-priority is 0 below every stated one, so the outer nullopt means "does not select".
std::optional<std::optional<int64_t>> Selects(const json& runtime, std::string_view format, std::string_view version,
                                              bool multi_node) {
  const json* spec = runtime.contains("spec") && runtime["spec"].is_object() ? &runtime["spec"] : nullptr;
  if (!spec) return std::nullopt;
  if (spec->value("disabled", false) == true) return std::nullopt;
  if (spec->contains("workerSpec") != multi_node) return std::nullopt;
  if (!spec->contains("supportedModelFormats") || !(*spec)["supportedModelFormats"].is_array()) return std::nullopt;
  for (const json& f : (*spec)["supportedModelFormats"]) {
    if (!f.is_object() || f.value("autoSelect", false) != true || !f.contains("name") || f["name"] != format) continue;
    if (!version.empty() && (!f.contains("version") || f["version"] != version)) continue;
    if (f.contains("priority") && f["priority"].is_number_integer()) return std::optional<int64_t>(f["priority"]);
    return std::optional<int64_t>();
  }
  return std::nullopt;
}

}  // namespace

void RuntimeCatalog::Add(JsonNode runtime) {
  const std::string_view api = runtime.StringMember("apiVersion");
  const std::string_view kind = runtime.StringMember("kind");
  const bool trainer =
      api == "trainer.kubeflow.org/v1alpha1" && (kind == "TrainingRuntime" || kind == "ClusterTrainingRuntime");
  const bool serving =
      api == "serving.kserve.io/v1alpha1" && (kind == "ServingRuntime" || kind == "ClusterServingRuntime");
  if (!trainer && !serving) return;
  JsonNode metadata = runtime.Find("metadata");
  std::string key = RuntimeKey(kind, metadata.StringMember("namespace"), metadata.StringMember("name"));
  if (serving && !by_key_.count(key)) serving_order_.push_back(key);
  by_key_.insert_or_assign(std::move(key), runtime.Copy());
}

const json* RuntimeCatalog::Find(std::string_view kind, std::string_view namespace_name, std::string_view name) const {
  auto it = by_key_.find(RuntimeKey(kind, namespace_name, name));
  return it == by_key_.end() ? nullptr : &it->second;
}

const json* RuntimeCatalog::FindServing(std::string_view namespace_name, std::string_view name, std::string_view format,
                                        std::string_view version, bool multi_node) const {
  if (!name.empty()) {
    const json* own = Find("ServingRuntime", namespace_name, name);
    return own ? own : Find("ClusterServingRuntime", namespace_name, name);
  }
  for (const std::string_view kind : {"ServingRuntime", "ClusterServingRuntime"}) {
    const json* best = nullptr;
    std::optional<int64_t> best_priority;
    for (const std::string& key : serving_order_) {
      const std::string prefix = RuntimeKey(kind, namespace_name, "");
      if (key.rfind(prefix, 0) != 0 || key.find('/', prefix.size()) != std::string::npos) continue;
      const json& runtime = by_key_.at(key);
      auto priority = Selects(runtime, format, version, multi_node);
      if (!priority) continue;
      // A stated priority wins over none, a higher one over a lower; ties keep the first.
      if (!best || (*priority && (!best_priority || **priority > *best_priority))) {
        best = &runtime;
        best_priority = *priority;
      }
    }
    if (best) return best;
  }
  return nullptr;
}

}  // namespace shmguard
