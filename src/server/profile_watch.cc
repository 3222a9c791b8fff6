// ProfileWatch: the ShmProfiles' indexed informer: each profile read once into the index the
// admission path reads.
#include "server/profile_watch.h"

namespace shmguard::server {
namespace {

// At most this many ShmProfiles, and JSON values of them, are held (SECURITY.md): a list past it
// fails and is tried again, and pods are sized from the formula meanwhile. The agent deletes the
// profiles not seen for the policy's observed.retention, so a cluster stays far below it.
kube::ReflectorOptions ProfileListOptions() {
  kube::ReflectorOptions o;
  o.path = kShmProfilesPath;
  o.max_list_items = 20'000;
  o.max_values = 600'000;
  return o;
}

}  // namespace

ProfileWatch::ProfileWatch(std::shared_ptr<kube::KubeClient> client)
    : client_(std::move(client)),
      informer_(client_, ProfileListOptions(),
                {.add =
                     [](ObservationIndex& index, const nlohmann::json& object) {
                       auto o = ReadShmProfile(object);
                       if (o) index.Put(std::move(*o));
                       return bool(o);
                     },
                 .remove =
                     [](ObservationIndex& index, const nlohmann::json& object) {
                       if (auto o = ReadShmProfile(object)) index.Erase(o->namespace_name, o->workload);
                     }},
                index_) {}

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

void ProfileWatch::SetProfiles(const nlohmann::json& items) {
  std::vector<nlohmann::json> list;
  if (items.is_array()) list.assign(items.begin(), items.end());
  informer_.Replace(std::move(list));
}

void ProfileWatch::UpdateProfile(const std::string& type, const nlohmann::json& object) {
  informer_.Apply(type, nlohmann::json(object));
}

}  // namespace shmguard::server
