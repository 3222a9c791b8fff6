// ClaimWatch: the webhook's copy of every ResourceClaim and ResourceClaimTemplate in the cluster
// (resource_claims.h), kept by two indexed informers (kube/indexed_informer.h) that publish into
// one index, for pods that get their GPUs through Dynamic Resource Allocation: a Pod names only
// its claims, and the device classes are in them. The admission path reads a snapshot (an
// immutable ClaimIndex; an event changes one entry of a copy) and makes no API call; until the first lists arrive, or
// when the API server cannot be reached, such a pod counts no GPUs from its claims. Stop closes the watches and joins.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "core/facts/resource_claims.h"
#include "kube/indexed_informer.h"

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
  std::shared_ptr<const ClaimIndex> Snapshot() const { return index_.Snapshot(); }
  bool synced() const { return claims_.HasSynced() && templates_.HasSynced(); }
  // Why the webhook should not be called yet: not listed, for at most kSyncGrace after Start.
  static constexpr std::chrono::seconds kSyncGrace{5};
  std::string NotReadyReason() const;

 private:
  std::shared_ptr<kube::KubeClient> client_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  kube::Published<ClaimIndex> index_;
  kube::IndexedInformer<ClaimIndex> claims_, templates_;
};

}  // namespace shmguard::server
