// ProfileWatch: ShmProfiles listed and watched into an index the admission path reads.
#include "server/profile_watch.h"

namespace shmguard::server {

ProfileWatch::~ProfileWatch() { Stop(); }

void ProfileWatch::Start() {
  if (!client_ || watcher_.joinable()) return;
  started_ = std::chrono::steady_clock::now();
  watcher_ = std::thread([this] {
    client_->ListWatch(
        kShmProfilesPath, [this](const nlohmann::json& items) { SetProfiles(items); },
        [this](const std::string& type, const nlohmann::json& object) { UpdateProfile(type, object); }, stop_);
  });
}

void ProfileWatch::Stop() {
  stop_ = true;
  // A watch waits on its connection (a bookmark or the watch's end); it ends with the process.
  if (watcher_.joinable()) watcher_.detach();
}

std::string ProfileWatch::NotReadyReason() const {
  if (synced_ || std::chrono::steady_clock::now() - started_ >= kSyncGrace) return {};
  return "the ShmProfiles are not listed yet";
}

std::shared_ptr<const ObservationIndex> ProfileWatch::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_;
}

void ProfileWatch::SetProfiles(const nlohmann::json& items) {
  auto next = std::make_shared<ObservationIndex>();
  if (items.is_array()) {
    for (const auto& item : items) {
      auto o = ReadShmProfile(item);
      if (!o) {
        unreadable_++;
        continue;
      }
      next->Put(std::move(*o));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  index_ = std::move(next);
  synced_ = true;
}

void ProfileWatch::UpdateProfile(const std::string& type, const nlohmann::json& object) {
  auto o = ReadShmProfile(object);
  if (!o) {
    unreadable_++;
    return;
  }
  // Copy on write: a request in flight keeps the snapshot it took. Profiles are one per
  // workload, and change when a pod's peak grows or a run ends: rarely.
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<ObservationIndex>(*index_);
  if (type == "DELETED") {
    next->Erase(o->namespace_name, o->workload);
  } else if (type == "ADDED" || type == "MODIFIED") {
    next->Put(std::move(*o));
  } else {
    return;
  }
  index_ = std::move(next);
}

}  // namespace shmguard::server
