// PodTable: the node's pods with /dev/shm volumes, as the informer tells of them.
#include "agent/pod_table.h"

#include "core/plan/shm_profile.h"

namespace shmguard::agent {

VolumeUse UseOf(const AgentPod& pod, const std::string& volume, const ShmWatch& w, int64_t margin_ppm) {
  VolumeUse u{pod.namespace_, pod.name,          volume,
              pod.workload,   w.used(),          w.size(),
              w.peak(),       pod.planned_bytes, LearnedBytes(static_cast<int64_t>(w.peak()), margin_ppm)};
  if (auto leak = pod.leaks.find(volume); leak != pod.leaks.end()) {
    u.leaked = leak->second.bytes;
    u.leaked_files = static_cast<int64_t>(leak->second.files.size());
  }
  return u;
}

std::string VolumeDir(const std::string& kubelet_dir, const std::string& uid, const std::string& volume) {
  return kubelet_dir + "/pods/" + uid + "/volumes/kubernetes.io~empty-dir/" + volume;
}

std::pair<uint64_t, uint64_t> AgentPod::Peak() const {
  std::pair<uint64_t, uint64_t> out{0, 0};
  for (const auto& [volume, w] : volumes) {
    if (w.peak() > out.first) out = {w.peak(), w.size()};
  }
  return out;
}

AgentPod AgentPod::Summary() const {
  AgentPod copy = *this;
  copy.object = nullptr;
  return copy;
}

void PodTable::Upsert(JsonNode pod) {
  JsonNode meta = pod.Find("metadata");
  const std::string uid(meta.StringMember("uid"));
  if (uid.empty()) return;
  const auto volumes = FindShmVolumes(pod);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = pods_.try_emplace(uid);
  AgentPod& p = it->second;
  if (added) {
    p.uid = uid;
    p.namespace_ = meta.StringMember("namespace");
    p.name = meta.StringMember("name");
    p.candidates = WorkloadCandidates(pod);
    p.workload = p.candidates.empty() ? "Pod/" + p.name : p.candidates.front();
  }
  if (!volumes.empty()) {
    // What GrowthTarget reads — the spec — as a Pod (a list's items carry no kind); not the
    // status, which changes on every heartbeat of its containers.
    p.object = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", p.name}, {"namespace", p.namespace_}}},
                {"spec", pod.Find("spec").IsObject() ? pod.Find("spec").Copy() : nlohmann::json::object()}};
  }
  p.planned_bytes = PlannedShmBytes(pod);
  p.run = ReadPodRunState(pod);
  p.reclaim_annotated = meta.Find("annotations").Find(kReclaimLeakedAnnotation).Is("true");
  std::map<std::string, ShmWatch> seen;
  seen.swap(p.volumes);
  for (const auto& v : volumes) {
    auto was = seen.find(v.name);
    p.volumes.emplace(v.name, was != seen.end() ? was->second : ShmWatch(threshold_));
  }
  // A resize the kubelet refuses leaves its reason on the pod (KEP-1287's PodResizePending).
  for (auto& [volume, g] : p.growth) {
    if (g.settled) continue;
    for (JsonNode c : pod.Find("status").Find("conditions").Items()) {
      if (!c.Find("type").Is("PodResizePending") || !c.Find("reason").Is("Infeasible")) continue;
      g.settled = true;
      refusals_.push_back({p.Summary(), volume, std::string(c.StringMember("message")), g});
    }
  }
  JsonNode phase = pod.Find("status").Find("phase");
  if (phase.Is("Succeeded") || phase.Is("Failed")) EndRun(p);
}

void PodTable::Delete(JsonNode pod) {
  const std::string uid(pod.Find("metadata").StringMember("uid"));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  EndRun(it->second);
  pods_.erase(it);
}

void PodTable::EndRun(AgentPod& pod) {
  if (pod.ended) return;
  bool sampled = false;
  for (const auto& [name, w] : pod.volumes) sampled = sampled || w.size() > 0;
  if (!sampled) return;
  pod.ended = true;
  runs_.push_back(pod.Summary());
}

void PodTable::With(const std::function<void(std::map<std::string, AgentPod>&)>& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f(pods_);
}

std::vector<AgentPod> PodTable::TakeRuns() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(runs_, {});
}

std::vector<RefusedResize> PodTable::TakeRefusals() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(refusals_, {});
}

std::vector<VolumeUse> PodTable::Uses(int64_t margin_ppm) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<VolumeUse> out;
  for (const auto& [uid, pod] : pods_) {
    for (const auto& [name, w] : pod.volumes) {
      if (w.size() == 0) continue;  // never sampled
      VolumeUse u{pod.namespace_, pod.name,          name,
                  pod.workload,   w.used(),          w.size(),
                  w.peak(),       pod.planned_bytes, LearnedBytes(static_cast<int64_t>(w.peak()), margin_ppm)};
      if (auto leak = pod.leaks.find(name); leak != pod.leaks.end()) {
        u.leaked = leak->second.bytes;
        u.leaked_files = static_cast<int64_t>(leak->second.files.size());
      }
      out.push_back(std::move(u));
    }
  }
  return out;
}

size_t PodTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_.size();
}

}  // namespace shmguard::agent
