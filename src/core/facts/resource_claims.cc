// ClaimGpus, ClaimIndex, ResolveClaimGpus: the GPUs of a pod's resource claims.
#include "core/facts/resource_claims.h"

#include <algorithm>

namespace shmguard {
namespace {

// One request's devices: `count` (1 when unset or not a whole number; All counts 1).
int64_t Devices(JsonNode request) {
  JsonNode count = request.Find("count");
  if (request.StringMember("allocationMode") == "All" || !count.IsInteger() || count.Integer() < 1) return 1;
  return count.Integer();
}

// The object's kind when it is a claim or template (`kind` given for a list's item), else "".
std::string_view ClaimKind(JsonNode object, std::string_view kind) {
  if (kind.empty()) {
    if (!object.StringMember("apiVersion").starts_with("resource.k8s.io/")) return {};
    kind = object.StringMember("kind");
  }
  return kind == "ResourceClaim" || kind == "ResourceClaimTemplate" ? kind : std::string_view();
}

// a + b GPUs, at most kMaxClaimGpus: counts up to 2^63-1 never wrap (into "no GPUs").
int64_t SaturatingGpus(int64_t a, int64_t b) { return b >= kMaxClaimGpus - a ? kMaxClaimGpus : a + b; }

}  // namespace

std::optional<ClaimDevices> ReadClaimDevices(JsonNode object, std::string_view kind) {
  kind = ClaimKind(object, kind);
  if (kind.empty()) return std::nullopt;
  JsonNode spec = object.Find("spec");
  if (kind == "ResourceClaimTemplate") spec = spec.Find("spec");
  ClaimDevices out;
  auto add = [&](JsonNode request) {
    JsonNode c = request.Find("deviceClassName");
    if (c.IsString()) out.emplace_back(std::string(c.String()), Devices(request));
  };
  for (JsonNode request : spec.Find("devices").Find("requests").Items()) {
    if (JsonNode exactly = request.Find("exactly")) {
      add(exactly);
    } else if (JsonNode alternatives = request.Find("firstAvailable")) {
      for (JsonNode alternative : alternatives.Items()) {
        add(alternative);
        break;
      }
    } else {
      add(request);
    }
  }
  return out;
}

int64_t ClaimGpus(const ClaimDevices& devices, const std::vector<std::string>& gpu_classes) {
  int64_t gpus = 0;
  for (const auto& [device_class, count] : devices) {
    if (std::find(gpu_classes.begin(), gpu_classes.end(), device_class) != gpu_classes.end()) {
      gpus = SaturatingGpus(gpus, count);
    }
  }
  return gpus;
}

bool ClaimIndex::Add(JsonNode object, std::string_view kind) {
  kind = ClaimKind(object, kind);
  auto devices = ReadClaimDevices(object, kind);
  if (!devices) return false;
  JsonNode meta = object.Find("metadata");
  std::string_view ns = meta.StringMember("namespace");
  devices_[{std::string(ns.empty() ? "default" : ns), std::string(kind), std::string(meta.StringMember("name"))}] =
      std::move(*devices);
  return true;
}

void ClaimIndex::Remove(JsonNode object, std::string_view kind) {
  kind = ClaimKind(object, kind);
  JsonNode meta = object.Find("metadata");
  std::string_view ns = meta.StringMember("namespace");
  devices_.erase(std::make_tuple(std::string(ns.empty() ? "default" : ns), std::string(kind),
                                 std::string(meta.StringMember("name"))));
}

const ClaimDevices* ClaimIndex::Find(std::string_view namespace_name, std::string_view kind,
                                     std::string_view name) const {
  auto it = devices_.find(std::make_tuple(std::string(namespace_name), std::string(kind), std::string(name)));
  return it == devices_.end() ? nullptr : &it->second;
}

void ResolveClaimGpus(PodTemplate& t, std::string_view namespace_name, const ClaimIndex& index,
                      const std::vector<std::string>& gpu_classes) {
  JsonNode claims = t.spec.Find("resourceClaims");
  if (!claims.IsArray()) return;
  // Each pod claim's GPUs, or why they are not known.
  std::map<std::string, int64_t, std::less<>> gpus;
  for (JsonNode c : claims.Items()) {
    const std::string_view name = c.StringMember("name");
    std::string_view kind = "ResourceClaim", object = c.StringMember("resourceClaimName");
    if (object.empty()) {
      kind = "ResourceClaimTemplate";
      object = c.StringMember("resourceClaimTemplateName");
    }
    if (name.empty() || object.empty()) continue;
    if (const ClaimDevices* d = index.Find(namespace_name.empty() ? "default" : namespace_name, kind, object)) {
      gpus[std::string(name)] = ClaimGpus(*d, gpu_classes);
    } else {
      t.claims_unknown += (t.claims_unknown.empty() ? "" : ", ") + std::string(kind) + " " + std::string(object);
    }
  }
  for (const auto& slot : t.containers) {
    if (!slot.list) continue;
    for (JsonNode container : FollowPointer(t.spec, std::string(slot.path)).Items()) {
      int64_t sum = 0;
      for (JsonNode used : container.Find("resources").Find("claims").Items()) {
        if (auto it = gpus.find(used.StringMember("name")); it != gpus.end()) sum = SaturatingGpus(sum, it->second);
      }
      if (sum > 0) t.claim_gpus.emplace_back(std::string(container.StringMember("name")), sum);
    }
  }
}

}  // namespace shmguard
