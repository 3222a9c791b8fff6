// ClaimWatch: the webhook's copy of every ResourceClaim and ResourceClaimTemplate in the cluster
// (resource_claims.h), kept by two informers (kube/informer.h), for pods that get their GPUs
// through Dynamic Resource Allocation: a Pod names only its claims, and the device classes are
// in them. The admission path reads a snapshot (an immutable ClaimIndex, replaced whole on each
// change) and makes no API call; until the first lists arrive, or when the API server cannot
// be reached, such a pod counts no GPUs from its claims. Stop closes the watches and joins.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "kube/informer.h"
#include "shmguard/resource_claims.h"

namespace shmguard::server {

inline constexpr char kResourceClaimsPath[] = "/apis/resource.k8s.io/v1/resourceclaims";
inline constexpr char kResourceClaimTemplatesPath[] = "/apis/resource.k8s.io/v1/resourceclaimtemplates";

class ClaimWatch {
 public:
  explicit ClaimWatch(std::shared_ptr<kube::KubeClient> client);
  ~ClaimWatch();  // Stop()

  void Start();
  void Stop();

  // The claims and templates known now; never null.
  std::shared_ptr<const ClaimIndex> Snapshot() const;
  bool synced() const { return claims_.HasSynced() && templates_.HasSynced(); }
  // Why the webhook should not be called yet: not listed, for at most kSyncGrace after Start.
  static constexpr std::chrono::seconds kSyncGrace{5};
  std::string NotReadyReason() const;

 private:
  void Rebuild();

  std::shared_ptr<kube::KubeClient> client_;
  std::mutex rebuild_mu_;  // one rebuild at a time: the two informers' threads both rebuild
  mutable std::mutex mu_;
  std::shared_ptr<const ClaimIndex> index_ = std::make_shared<ClaimIndex>();
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  kube::Informer claims_, templates_;
};

}  // namespace shmguard::server
