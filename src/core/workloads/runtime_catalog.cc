// RuntimeCatalog: the runtimes an input declares. Sources: kubeflow/trainer
// pkg/apis/trainer/v1alpha1 (TrainingRuntime, ClusterTrainingRuntime); kserve/kserve
// pkg/apis/serving/v1alpha1/servingruntime_types.go and pkg/apis/serving/v1beta1/predictor_model.go
// (GetSupportingRuntimes, RuntimeSupportsModel, sortSupportedRuntimeByPriority).
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/workloads/pod_templates.h"

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

// A runtime that states no priority for a format ranks below every one that does.
constexpr int64_t kNoPriority = std::numeric_limits<int64_t>::min();

// The priority `runtime` gives `format` when it auto-selects it (at `version`, when given), or
// nullopt when it does not select it.
std::optional<int64_t> Selects(JsonNode runtime, std::string_view format, std::string_view version, bool multi_node) {
  JsonNode spec = runtime.Find("spec");
  if (!spec.IsObject() || spec.Find("disabled").Bool() || bool(spec.Find("workerSpec")) != multi_node) {
    return std::nullopt;
  }
  for (JsonNode f : spec.Find("supportedModelFormats").Items()) {
    if (!f.Find("autoSelect").Bool() || !f.Find("name").Is(format)) continue;
    if (!version.empty() && !f.Find("version").Is(version)) continue;
    return f.Find("priority").IsInteger() ? f.Find("priority").Integer() : kNoPriority;
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
    const std::string prefix = RuntimeKey(kind, namespace_name, "");
    const json* best = nullptr;
    int64_t best_priority = kNoPriority;
    for (const std::string& key : serving_order_) {
      if (key.rfind(prefix, 0) != 0 || key.find('/', prefix.size()) != std::string::npos) continue;
      const json& runtime = by_key_.at(key);
      auto priority = Selects(runtime, format, version, multi_node);
      // A higher priority wins; ties keep the first.
      if (priority && (!best || *priority > best_priority)) {
        best = &runtime;
        best_priority = *priority;
      }
    }
    if (best) return best;
  }
  return nullptr;
}

}  // namespace shmguard
