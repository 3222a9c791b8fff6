// ConfigMapWatch: the ConfigMaps' indexed informer, publishing into the index the admission path
// reads.
#include "server/config_map_watch.h"

#include "io/config/config_map.h"
#include "kube/kube_client.h"

namespace shmguard::server {
namespace {

// The list is bounded (SECURITY.md); its items carry no kind, so the informer says it.
kube::ReflectorOptions ListOptions(const std::string& selector) {
  kube::ReflectorOptions o;
  o.path = kConfigMapsPath;
  if (!selector.empty()) o.path += "?labelSelector=" + kube::QueryValue(selector);
  return o;
}

kube::IndexedInformer<ConfigMapIndex>::Rows Rows() {
  return {.add =
              [](ConfigMapIndex& index, const nlohmann::json& o) {
                auto cm = io::ReadConfigMap(JsonNode(o), "ConfigMap");
                if (!cm) return false;
                if (cm->data.empty()) {
                  index.Erase(cm->namespace_name, cm->name);
                } else {
                  index.Put(cm->namespace_name, cm->name, std::move(cm->data));
                }
                return true;
              },
          .remove =
              [](ConfigMapIndex& index, const nlohmann::json& o) {
                JsonNode meta = JsonNode(o).Find("metadata");
                index.Erase(meta.StringMember("namespace"), meta.StringMember("name"));
              }};
}

}  // namespace

ConfigMapWatch::ConfigMapWatch(std::shared_ptr<kube::KubeClient> client, const std::string& selector)
    : client_(std::move(client)), maps_(client_, ListOptions(selector), Rows(), index_) {}

ConfigMapWatch::~ConfigMapWatch() { Stop(); }

void ConfigMapWatch::Start() {
  if (!client_) return;
  started_ = std::chrono::steady_clock::now();
  maps_.Start();
}

void ConfigMapWatch::Stop() { maps_.Stop(); }

std::string ConfigMapWatch::NotReadyReason() const {
  if (synced() || std::chrono::steady_clock::now() - started_ >= kSyncGrace) return {};
  return "the ConfigMaps are not listed yet";
}

}  // namespace shmguard::server
