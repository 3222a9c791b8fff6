// ReadPolicyFloor and UndoPolicyFloor.
#include "shmguard/policy_floor.h"

#include "shmguard/pod_templates.h"

namespace shmguard {

std::optional<PolicyFloor> ReadPolicyFloor(JsonNode pod) {
  JsonNode plan = pod.Find("metadata").Find("annotations").Find(kPlanAnnotation);
  if (!plan.IsString()) return std::nullopt;
  const nlohmann::json p = nlohmann::json::parse(plan.String(), nullptr, /*allow_exceptions=*/false);
  if (!p.is_object() || p.value("policyMode", nlohmann::json()) != true) return std::nullopt;
  PolicyFloor floor;
  if (auto v = p.find("volume"); v != p.end() && v->is_string()) floor.volume = v->get<std::string>();
  if (auto r = p.find("raisedFrom"); r != p.end() && r->is_string()) floor.raised_from = r->get<std::string>();
  return floor;
}

namespace {

// Removes every mount of `volume` from each container of `list`.
void RemoveMounts(nlohmann::json& list, const std::string& volume) {
  if (!list.is_array()) return;
  for (auto& c : list) {
    if (!c.is_object() || !c.contains("volumeMounts") || !c["volumeMounts"].is_array()) continue;
    auto& mounts = c["volumeMounts"];
    nlohmann::json kept = nlohmann::json::array();
    for (auto& m : mounts) {
      if (!(m.is_object() && m.value("name", nlohmann::json()) == volume)) kept.push_back(std::move(m));
    }
    if (kept.empty()) {
      c.erase("volumeMounts");
    } else {
      mounts = std::move(kept);
    }
  }
}

}  // namespace

nlohmann::json UndoPolicyFloor(JsonNode pod, const PolicyFloor& floor) {
  nlohmann::json out = pod.Copy();
  if (auto meta = out.find("metadata"); meta != out.end() && meta->is_object()) {
    if (auto a = meta->find("annotations"); a != meta->end() && a->is_object()) a->erase(kPlanAnnotation);
  }
  auto spec = out.find("spec");
  if (floor.volume.empty() || spec == out.end() || !spec->is_object()) return out;
  auto volumes = spec->find("volumes");
  if (volumes == spec->end() || !volumes->is_array()) return out;
  for (size_t i = 0; i < volumes->size(); ++i) {
    nlohmann::json& v = (*volumes)[i];
    if (!v.is_object() || v.value("name", nlohmann::json()) != floor.volume) continue;
    auto dir = v.find("emptyDir");
    if (dir == v.end() || !dir->is_object() || dir->value("medium", nlohmann::json()) != "Memory") return out;
    if (!floor.raised_from.empty()) {
      (*dir)["sizeLimit"] = floor.raised_from;
      return out;
    }
    volumes->erase(i);
    if (volumes->empty()) spec->erase("volumes");
    for (const char* list : {"containers", "initContainers", "ephemeralContainers"}) {
      if (auto l = spec->find(list); l != spec->end()) RemoveMounts(*l, floor.volume);
    }
    return out;
  }
  return out;
}

}  // namespace shmguard
