// PodSet: the node's pods a finder flags, kept from the pod informer's events by UID while the
// finder flags them and they have not ended, each told once (TakeNew). What UnpatchedPods and
// LimitBelowShmPods keep; each renders its own series.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/values/json_node.h"

namespace shmguard::agent {

template <class T>
struct FlaggedPod {
  std::string namespace_, name, uid;
  T value;
};

// True for a pod that has ended (Succeeded or Failed): nothing runs in it to be flagged.
inline bool PodEnded(JsonNode pod) {
  const std::string_view phase = pod.Find("status").StringMember("phase");
  return phase == "Succeeded" || phase == "Failed";
}

template <class T>
class PodSet {
 public:
  // `pod` added or changed, with what the finder found of it: kept while found, else dropped.
  void Update(JsonNode pod, std::optional<T> found) {
    JsonNode meta = pod.Find("metadata");
    const std::string uid(meta.StringMember("uid"));
    if (uid.empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (!found) {
      pods_.erase(uid);
      return;
    }
    FlaggedPod<T> flagged{std::string(meta.StringMember("namespace")), std::string(meta.StringMember("name")), uid,
                          std::move(*found)};
    auto [it, added] = pods_.insert_or_assign(uid, std::move(flagged));
    if (added) new_.push_back(it->second);
  }
  // A pod deleted.
  void Remove(JsonNode pod) {
    std::lock_guard<std::mutex> lock(mu_);
    pods_.erase(std::string(pod.Find("metadata").StringMember("uid")));
  }
  // The pods flagged since the last call, each once: the Events to record.
  std::vector<FlaggedPod<T>> TakeNew() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(new_, {});
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pods_.size();
  }
  // Every pod flagged now, by UID.
  std::vector<FlaggedPod<T>> List() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<FlaggedPod<T>> out;
    out.reserve(pods_.size());
    for (const auto& [uid, p] : pods_) out.push_back(p);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, FlaggedPod<T>> pods_;  // by UID
  std::vector<FlaggedPod<T>> new_;
};

}  // namespace shmguard::agent
