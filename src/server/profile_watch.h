// ProfileWatch: the webhook's copy of every ShmProfile in the cluster (shm_profile.h), kept by
// a list+watch (KubeClient) on a thread of its own. The admission path reads a snapshot
// (an immutable ObservationIndex, replaced whole on each change) and makes no API call; until
// the first list arrives, or when the API server cannot be reached, pods are sized from the
// formula alone.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/kube_client.h"
#include "shmguard/shm_profile.h"

namespace shmguard::server {

inline constexpr char kShmProfilesPath[] = "/apis/shmguard.io/v1alpha1/shmprofiles";

class ProfileWatch {
 public:
  // `client` may be null (tests): profiles come from SetProfiles and UpdateProfile.
  explicit ProfileWatch(std::shared_ptr<KubeClient> client) : client_(std::move(client)) {}
  ~ProfileWatch();  // Stop()

  void Start();
  void Stop();

  // The profiles known now; never null.
  std::shared_ptr<const ObservationIndex> Snapshot() const;
  bool synced() const { return state_->synced; }
  // Why the webhook should not be called yet: the profiles are not listed, for at most
  // kSyncGrace after Start (after that, or when the API server cannot be reached, pods are
  // sized from the formula alone rather than not at all). Empty when ready.
  static constexpr std::chrono::seconds kSyncGrace{5};
  std::string NotReadyReason() const;
  // ShmProfiles skipped because they could not be read (ReadShmProfile), since the start.
  uint64_t unreadable() const { return state_->unreadable; }
  const KubeClient* client() const { return client_.get(); }

  // A list's items, replacing what was known.
  void SetProfiles(const nlohmann::json& items) { state_->SetProfiles(items); }
  // A watch event: ADDED, MODIFIED or DELETED.
  void UpdateProfile(const std::string& type, const nlohmann::json& object) { state_->UpdateProfile(type, object); }

 private:
  // What the watch writes and the admission path reads. The watch's thread holds it (and the
  // client) as well: Stop leaves that thread to end with its connection, after this object.
  struct State {
    mutable std::mutex mu;
    std::shared_ptr<const ObservationIndex> index = std::make_shared<ObservationIndex>();
    std::atomic<bool> synced{false}, stop{false};
    std::atomic<uint64_t> unreadable{0};
    void SetProfiles(const nlohmann::json& items);
    void UpdateProfile(const std::string& type, const nlohmann::json& object);
  };

  std::shared_ptr<KubeClient> client_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::thread watcher_;
};

}  // namespace shmguard::server
