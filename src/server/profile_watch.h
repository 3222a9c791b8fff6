// ProfileWatch: the webhook's copy of every ShmProfile in the cluster (shm_profile.h), kept by an
// informer (kube/informer.h) on a thread of its own. The admission path reads a snapshot (an
// immutable ObservationIndex, replaced whole on each change) and makes no API call; until the
// first list arrives, or when the API server cannot be reached, pods are sized from the formula
// alone. Stop closes the watch and joins its thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/plan/shm_profile.h"
#include "kube/indexed_informer.h"

namespace shmguard::server {

inline constexpr char kShmProfilesPath[] = "/apis/shmguard.io/v1alpha1/shmprofiles";

class ProfileWatch {
 public:
  // `client` may be null (tests): profiles come from SetProfiles and UpdateProfile.
  explicit ProfileWatch(std::shared_ptr<kube::KubeClient> client);
  ~ProfileWatch();  // Stop()

  void Start();
  void Stop();

  // The profiles known now; never null.
  std::shared_ptr<const ObservationIndex> Snapshot() const { return index_.Snapshot(); }
  bool synced() const { return informer_.HasSynced(); }
  // Why the webhook should not be called yet: the profiles are not listed, for at most
  // kSyncGrace after Start (after that, or when the API server cannot be reached, pods are
  // sized from the formula alone rather than not at all). Empty when ready.
  static constexpr std::chrono::seconds kSyncGrace{5};
  std::string NotReadyReason() const;
  // ShmProfiles skipped because they could not be read (ReadShmProfile), since the start.
  uint64_t unreadable() const { return informer_.unreadable(); }
  const kube::ReflectorStats& stats() const { return informer_.stats(); }

  // A list's items, replacing what was known; a watch event (ADDED, MODIFIED or DELETED): what
  // the informer is fed, for tests without an API server.
  void SetProfiles(const nlohmann::json& items);
  void UpdateProfile(const std::string& type, const nlohmann::json& object);

 private:
  std::shared_ptr<kube::KubeClient> client_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  kube::Published<ObservationIndex> index_;
  kube::IndexedInformer<ObservationIndex> informer_;
};

}  // namespace shmguard::server
