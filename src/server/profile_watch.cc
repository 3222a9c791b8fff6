// ProfileWatch: ShmProfiles listed and watched into an index the admission path reads.
#include "server/profile_watch.h"

namespace shmguard::server {

ProfileWatch::~ProfileWatch() { Stop(); }

void ProfileWatch::Start() {
  if (!client_ || watcher_.joinable()) return;
  started_ = std::chrono::steady_clock::now();
  // The thread owns what it touches (never `this`): it may outlive this object.
  watcher_ = std::thread([client = client_, state = state_] {
    client->ListWatch(
        kShmProfilesPath, [&state](const nlohmann::json& items) { state->SetProfiles(items); },
        [&state](const std::string& type, const nlohmann::json& object) { state->UpdateProfile(type, object); },
        state->stop);
  });
}

void ProfileWatch::Stop() {
  state_->stop = true;
  // A watch waits on its connection (a bookmark or the watch's end): it is not waited for, and
  // ends when it next sees `stop`, or with the process.
  if (watcher_.joinable()) watcher_.detach();
}

std::string ProfileWatch::NotReadyReason() const {
  if (state_->synced || std::chrono::steady_clock::now() - started_ >= kSyncGrace) return {};
  return "the ShmProfiles are not listed yet";
}

std::shared_ptr<const ObservationIndex> ProfileWatch::Snapshot() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->index;
}

void ProfileWatch::State::SetProfiles(const nlohmann::json& items) {
  auto next = std::make_shared<ObservationIndex>();
  if (items.is_array()) {
    for (const auto& item : items) {
      auto o = ReadShmProfile(item);
      if (!o) {
        unreadable++;
        continue;
      }
      next->Put(std::move(*o));
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  index = std::move(next);
  synced = true;
}

void ProfileWatch::State::UpdateProfile(const std::string& type, const nlohmann::json& object) {
  auto o = ReadShmProfile(object);
  if (!o) {
    unreadable++;
    return;
  }
  // Copy on write: a request in flight keeps the snapshot it took. Profiles are one per
  // workload, and change when a pod's peak grows or a run ends: rarely.
  std::lock_guard<std::mutex> lock(mu);
  auto next = std::make_shared<ObservationIndex>(*index);
  if (type == "DELETED") {
    next->Erase(o->namespace_name, o->workload);
  } else if (type == "ADDED" || type == "MODIFIED") {
    next->Put(std::move(*o));
  } else {
    return;
  }
  index = std::move(next);
}

}  // namespace shmguard::server
