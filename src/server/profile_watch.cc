// ProfileWatch: the ShmProfiles' informer and the index the admission path reads.
#include "server/profile_watch.h"

namespace shmguard::server {

ProfileWatch::ProfileWatch(std::shared_ptr<kube::KubeClient> client)
    : client_(std::move(client)),
      informer_(client_, kube::ReflectorOptions{.path = kShmProfilesPath},
                kube::InformerHandlers{.on_add = [this](const nlohmann::json&) { Rebuild(); },
                                       .on_update = [this](const nlohmann::json&, const nlohmann::json&) { Rebuild(); },
                                       .on_delete = [this](const nlohmann::json&) { Rebuild(); },
                                       .on_synced = [this] { Rebuild(); }}) {}

ProfileWatch::~ProfileWatch() { Stop(); }

void ProfileWatch::Start() {
  if (!client_) return;
  started_ = std::chrono::steady_clock::now();
  informer_.Start();
}

void ProfileWatch::Stop() { informer_.Stop(); }

std::string ProfileWatch::NotReadyReason() const {
  if (informer_.HasSynced() || std::chrono::steady_clock::now() - started_ >= kSyncGrace) return {};
  return "the ShmProfiles are not listed yet";
}

std::shared_ptr<const ObservationIndex> ProfileWatch::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_;
}

void ProfileWatch::SetProfiles(const nlohmann::json& items) {
  std::vector<nlohmann::json> list;
  if (items.is_array()) list.assign(items.begin(), items.end());
  informer_.Replace(std::move(list));
}

void ProfileWatch::UpdateProfile(const std::string& type, const nlohmann::json& object) {
  informer_.Apply(type, nlohmann::json(object));
}

void ProfileWatch::Rebuild() {
  // Copy on write: a request in flight keeps the snapshot it took. Profiles are one per
  // workload and change when a pod's peak grows or a run ends: rarely. A list's changes rebuild
  // once each and once more at its end.
  auto next = std::make_shared<ObservationIndex>();
  uint64_t unreadable = 0;
  for (const auto& object : informer_.List()) {
    auto o = ReadShmProfile(*object);
    if (!o) {
      unreadable++;
      continue;
    }
    next->Put(std::move(*o));
  }
  unreadable_ = unreadable;
  std::lock_guard<std::mutex> lock(mu_);
  index_ = std::move(next);
}

}  // namespace shmguard::server
