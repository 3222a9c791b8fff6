// PeerTable: how many connections each peer address holds, over all of a server's event loops,
// for the share one peer may hold (HttpsServerOptions::peer_share).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace shmguard::http {

// The open connections of each peer address, over all loops.
class PeerTable {
 public:
  size_t Count(const std::string& peer) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(peer);
    return it == counts_.end() ? 0 : it->second;
  }
  void Add(const std::string& peer) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[peer];
  }
  void Release(const std::string& peer) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(peer);
    if (it != counts_.end() && --it->second == 0) counts_.erase(it);
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, size_t> counts_;
};

}  // namespace shmguard::http
