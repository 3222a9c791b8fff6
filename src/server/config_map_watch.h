// ConfigMapWatch: the webhook's copy of the ConfigMaps in the cluster that a server's launch can
// read (core/facts/config_maps.h): a vLLM --config file a configMap volume mounts, the
// variables envFrom sets. One indexed informer (kube/indexed_informer.h) keeps what
// io::ReadConfigMap keeps of each (values up to 4 KiB, YAML files up to 64 KiB; a ConfigMap with
// neither is not kept). The admission path reads a snapshot and makes no API call; until the
// first list arrives, or when the API server cannot be reached, a launch is read without them
// (its --config counts are the pod's GPUs). Stop closes the watch and joins.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/facts/config_maps.h"
#include "kube/indexed_informer.h"

namespace shmguard::server {

inline constexpr char kConfigMapsPath[] = "/api/v1/configmaps";

class ConfigMapWatch {
 public:
  // `selector`: a label selector the list and watch ask for ("" all ConfigMaps).
  ConfigMapWatch(std::shared_ptr<kube::KubeClient> client, const std::string& selector);
  ~ConfigMapWatch();  // Stop()

  void Start();
  void Stop();

  // The ConfigMaps known now; never null.
  std::shared_ptr<const ConfigMapIndex> Snapshot() const { return index_.Snapshot(); }
  bool synced() const { return maps_.HasSynced(); }
  // Why the webhook should not be called yet: not listed, for at most kSyncGrace after Start.
  static constexpr std::chrono::seconds kSyncGrace{5};
  std::string NotReadyReason() const;

 private:
  std::shared_ptr<kube::KubeClient> client_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  kube::Published<ConfigMapIndex> index_;
  kube::IndexedInformer<ConfigMapIndex> maps_;
};

}  // namespace shmguard::server
