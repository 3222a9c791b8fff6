// IndexedInformer: an informer whose objects are read once each into an index that readers take
// immutable snapshots of, as client-go's Indexer keeps its indices: a watch event takes one
// object out of the index and puts one in (no other object is read again), and a list replaces
// this informer's objects at once. Several informers may publish into one index (ResourceClaims
// and ResourceClaimTemplates). A reader's snapshot is never changed; each change publishes a new
// copy of the index (a copy of its entries, not a reading of the objects).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "kube/informer.h"

namespace shmguard::kube {

// The index readers see: replaced whole under a lock, read as a snapshot without one.
template <typename Index>
class Published {
 public:
  std::shared_ptr<const Index> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return index_;
  }
  // A copy of the index, changed by `change`, becomes the index.
  void Update(const std::function<void(Index&)>& change) {
    std::lock_guard<std::mutex> updating(update_mu_);
    auto next = std::make_shared<Index>(*Snapshot());
    change(*next);
    std::lock_guard<std::mutex> lock(mu_);
    index_ = std::move(next);
  }

 private:
  mutable std::mutex mu_;
  std::mutex update_mu_;  // one change at a time: two informers may publish here
  std::shared_ptr<const Index> index_ = std::make_shared<Index>();
};

template <typename Index>
class IndexedInformer {
 public:
  // How an object goes into the index: `add` reads it in (false when it cannot be read, which
  // is counted); `remove` takes out what `add` put in for the same object.
  struct Rows {
    std::function<bool(Index&, const nlohmann::json&)> add;
    std::function<void(Index&, const nlohmann::json&)> remove;
  };

  // `client` may be null (tests): objects then come from Replace and Apply.
  IndexedInformer(std::shared_ptr<KubeClient> client, ReflectorOptions options, Rows rows, Published<Index>& into)
      : client_(std::move(client)),
        rows_(std::move(rows)),
        into_(into),
        informer_(client_, std::move(options),
                  InformerHandlers{
                      .on_add = [this](const nlohmann::json& o) { Change(nullptr, &o); },
                      .on_update = [this](const nlohmann::json& old, const nlohmann::json& o) { Change(&old, &o); },
                      .on_delete = [this](const nlohmann::json& old) { Change(&old, nullptr); },
                      .on_synced = nullptr,
                      .on_relisted = [this](const Informer::Objects& before,
                                            const Informer::Objects& after) { Relisted(before, after); },
                  }) {}

  void Start() {
    if (client_) informer_.Start();
  }
  void Stop() { informer_.Stop(); }
  bool HasSynced() const { return informer_.HasSynced(); }
  size_t size() const { return informer_.size(); }
  // Objects `add` could not read, since the start.
  uint64_t unreadable() const { return unreadable_; }
  const ReflectorStats& stats() const { return informer_.stats(); }

  // What the reflector hands on, for tests without an API server.
  void Replace(std::vector<nlohmann::json>&& items) { informer_.Replace(std::move(items)); }
  void Apply(const std::string& type, nlohmann::json&& object) { informer_.Apply(type, std::move(object)); }

 private:
  void Change(const nlohmann::json* old, const nlohmann::json* now) {
    into_.Update([&](Index& index) {
      if (old) rows_.remove(index, *old);
      if (now && !rows_.add(index, *now)) unreadable_++;
    });
  }
  void Relisted(const Informer::Objects& before, const Informer::Objects& after) {
    into_.Update([&](Index& index) {
      for (const auto& o : before) rows_.remove(index, *o);
      for (const auto& o : after) {
        if (!rows_.add(index, *o)) unreadable_++;
      }
    });
  }

  std::shared_ptr<KubeClient> client_;
  Rows rows_;
  Published<Index>& into_;
  std::atomic<uint64_t> unreadable_{0};
  Informer informer_;
};

}  // namespace shmguard::kube
