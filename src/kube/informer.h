// Informer: a collection of the API kept in memory, as client-go's SharedInformer keeps it — a
// store of the objects by namespace/name, fed by a Reflector on a thread of its own; handlers
// told of each object added, changed or deleted (a relist is compared with the store, so an
// object deleted while the watch was down is told as deleted); and HasSynced once the first
// list is in. Objects are stored without metadata.managedFields (client-go's usual
// TransformFunc), most of an object's bytes and never read. Stop cancels the watch, closing its
// connection, and joins the thread: nothing the informer started outlives it.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kube/reflector.h"

namespace shmguard::kube {

class Informer;

// Told of every change of the store, on the informer's thread, outside its lock. Each may be
// empty.
struct InformerHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& object)> on_update;
  std::function<void(const nlohmann::json& last_known)> on_delete;
  // After each list has been folded in (the first: HasSynced() turns true just before).
  std::function<void()> on_synced;
  // When set, a list is told once, with the objects known before it and after it, instead of
  // one on_add, on_update or on_delete per object: for a handler that rebuilds from all of them.
  std::function<void(const std::vector<std::shared_ptr<const nlohmann::json>>& before,
                     const std::vector<std::shared_ptr<const nlohmann::json>>& after)>
      on_relisted;
};

class Informer {
 public:
  using Objects = std::vector<std::shared_ptr<const nlohmann::json>>;

  Informer(std::shared_ptr<KubeClient> client, ReflectorOptions options, InformerHandlers handlers);
  ~Informer();  // Stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Cancels the watch (its connection is closed) and joins the thread. Idempotent.
  void Stop();

  bool HasSynced() const { return synced_; }
  // The objects known, in namespace/name order.
  std::vector<std::shared_ptr<const nlohmann::json>> List() const;
  size_t size() const;
  const ReflectorStats& stats() const { return reflector_.stats(); }

  // What the reflector hands on, for tests that feed an informer without an API server.
  void Replace(std::vector<nlohmann::json>&& items);
  void Apply(const std::string& type, nlohmann::json&& object);

 private:
  using Store = std::map<std::string, std::shared_ptr<const nlohmann::json>>;

  InformerHandlers handlers_;
  mutable std::mutex mu_;
  Store store_;
  std::atomic<bool> synced_{false};
  Reflector reflector_;
  StreamCancel cancel_;
  std::thread thread_;
};

// "namespace/name" of an object ("name" for a cluster-scoped one); "" without a name.
std::string ObjectKey(const nlohmann::json& object);

}  // namespace shmguard::kube
