// Dynamic Resource Allocation: the GPUs a pod gets through resource claims (resource.k8s.io,
// GA since Kubernetes 1.34) rather than a device plugin's resource. A Pod names only its claims
// (spec.resourceClaims: a ResourceClaim, or a ResourceClaimTemplate each pod gets its own claim
// from) and which containers use them (resources.claims); the devices, by device class, are in
// the claim or template (spec.devices.requests). ClaimIndex holds what the claims and templates
// of a namespace ask for, read from the API (the webhook's informer) or from the same files
// (the audit); ResolveClaimGpus gives each container its share. Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/values/json_node.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

// The most GPUs the claims of a pod or container count: far above any node. Sums of claims'
// counts stop there, never wrap.
inline constexpr int64_t kMaxClaimGpus = int64_t{1} << 20;

// The devices a ResourceClaim's or ResourceClaimTemplate's requests ask for, by device class:
// each request (resource.k8s.io/v1 `exactly`, or v1beta1's fields on the request itself; a
// `firstAvailable` list's first alternative), `count` devices (1 when unset; allocationMode All
// counts 1, as the node's number is not in the object). nullopt for any other object. `kind`:
// "ResourceClaim" or "ResourceClaimTemplate" for an object of a list, whose items carry no kind
// (the API's lists, an informer's store); empty: the object's own kind and apiVersion say.
using ClaimDevices = std::vector<std::pair<std::string, int64_t>>;  // (deviceClassName, count)
std::optional<ClaimDevices> ReadClaimDevices(JsonNode object, std::string_view kind = {});

// The GPUs among `devices`: those of a class in `gpu_classes`.
int64_t ClaimGpus(const ClaimDevices& devices, const std::vector<std::string>& gpu_classes);

class ClaimIndex {
 public:
  // Records `object` when it is a ResourceClaim or ResourceClaimTemplate (ReadClaimDevices),
  // under its namespace ("default" when it has none); returns whether it was one.
  bool Add(JsonNode object, std::string_view kind = {});
  // Takes out what Add put in for `object` (by its namespace, kind and name).
  void Remove(JsonNode object, std::string_view kind = {});
  // The devices of a claim ("ResourceClaim") or template ("ResourceClaimTemplate"); null when
  // it is not known.
  const ClaimDevices* Find(std::string_view namespace_name, std::string_view kind, std::string_view name) const;
  size_t size() const { return devices_.size(); }

 private:
  std::map<std::tuple<std::string, std::string, std::string>, ClaimDevices, std::less<>> devices_;
};

// Sets t.claim_gpus: for each container that uses a pod claim (resources.claims[].name) whose
// ResourceClaim or ResourceClaimTemplate `index` knows in `namespace_name`, the GPUs it asks
// for (devices of `gpu_classes`); and t.claims_unknown to the claims it does not know, in
// words. A claim two containers share counts for each.
void ResolveClaimGpus(PodTemplate& t, std::string_view namespace_name, const ClaimIndex& index,
                      const std::vector<std::string>& gpu_classes);

}  // namespace shmguard
