// Grower: the resize asked for, and its outcome said and, when refused, undone.
#include "agent/growth.h"

#include "core/node/shm_watch.h"
#include "core/values/quantity.h"

namespace shmguard::agent {
namespace {

const char* RefusalText(GrowthRefusal r) {
  switch (r) {
    case GrowthRefusal::kNoSizeLimit:
      return "the volume has no sizeLimit (it already is the memory limit, and a resize may not add one)";
    case GrowthRefusal::kNoMemoryLimit: return "the pod has no memory limit to grow within";
    case GrowthRefusal::kNoRoom: return "its sizeLimit is already at maxFractionOfMemoryLimit of the memory limit";
    case GrowthRefusal::kUnreadable: return "the pod's spec could not be read";
    case GrowthRefusal::kNone: break;
  }
  return "";
}

constexpr const char* kStrategicMerge = "application/strategic-merge-patch+json";

}  // namespace

bool Grower::Enabled(const std::string& namespace_name) {
  if (MatchNamespace(policy_, namespace_name).grow_in_place) return true;
  if (!client_) return false;
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = namespaces_.find(namespace_name);
    if (it != namespaces_.end() && now - it->second.read < std::chrono::seconds(30)) return it->second.on;
  }
  auto res = client_->Request("GET", "/api/v1/namespaces/" + namespace_name);
  bool on = res && res->ok() &&
            JsonNode(res->body).Find("metadata").Find("labels").Find("shmguard.io/grow-in-place").Is("true");
  std::lock_guard<std::mutex> lock(mu_);
  namespaces_[namespace_name] = {on, now};
  return on;
}

void Grower::Remember(const AgentPod& pod, const std::string& volume, const GrowthState& state) {
  table_.With([&](std::map<std::string, AgentPod>& pods) {
    if (auto it = pods.find(pod.uid); it != pods.end()) it->second.growth[volume] = state;
  });
}

void Grower::Grow(const AgentPod& pod, const std::string& volume, const ShmWatch& w) {
  if (!client_ || pod.growth.count(volume) || !Enabled(pod.namespace_)) return;
  GrowthState state;
  state.requested = Clock::now();
  state.settled = true;  // unless the API server takes it
  Growth g = GrowthTarget(pod.object, volume, policy_);
  if (g.refusal != GrowthRefusal::kNone) {
    Remember(pod, volume, state);
    counts_.refused++;
    events_.Record(pod, volume, AgentEvent::kShmGrowthRefused,
                   NotGrownWords(volume, "", RefusalText(g.refusal), w.peak()));
    return;
  }
  state.from = g.from_bytes;
  state.to = g.to_bytes;
  auto res = client_->Request("PATCH", "/api/v1/namespaces/" + pod.namespace_ + "/pods/" + pod.name + "/resize",
                              ResizeVolumePatch(volume, g.to_bytes), kStrategicMerge);
  counts_.requested++;
  std::string why;
  if (!res) {
    why = "the resize could not be sent: " + res.error().message;
  } else if (!res->ok()) {
    why = "the API server refused the resize: " + res->Message();
  } else if (GrowthTarget(res->body, volume, policy_).from_bytes != g.to_bytes) {  // the pod it returned
    // Without InPlacePodVerticalScalingMemoryBackedVolumes the API server drops volume changes
    // from a resize and answers 200 (podResizeStrategy).
    why = "the API server kept the old sizeLimit: InPlacePodVerticalScalingMemoryBackedVolumes is off there";
  }
  if (!why.empty()) {
    Remember(pod, volume, state);
    counts_.rejected++;
    events_.Record(pod, volume, AgentEvent::kShmGrowthRefused,
                   NotGrownWords(volume, FormatBytes(g.from_bytes) + " to " + FormatBytes(g.to_bytes), why, w.peak()));
    return;
  }
  state.settled = false;
  Remember(pod, volume, state);
}

void Grower::Settle(const ResizeOutcome& o) {
  const std::string sizes = FormatBytes(o.state.from) + " to " + FormatBytes(o.state.to);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - o.state.requested).count();
  if (o.grown) {
    counts_.grown++;
    events_.Record(o.pod, o.volume, AgentEvent::kShmGrown, GrownWords(o.volume, sizes, ms));
    return;
  }
  counts_.timed_out++;
  events_.Record(o.pod, o.volume, AgentEvent::kShmGrowthRefused, GrowthTimedOutWords(o.volume, sizes, ms));
}

void Grower::Settle(const RefusedResize& r) {
  const std::string sizes = FormatBytes(r.state.from) + " to " + FormatBytes(r.state.to);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - r.state.requested).count();
  counts_.refused++;
  // Put the spec back, so that it says what the pod has; the kubelet then drops the pending
  // resize. Not retried: the next pods of the workload get the recorded peak instead.
  if (client_) {
    client_->Request("PATCH", "/api/v1/namespaces/" + r.pod.namespace_ + "/pods/" + r.pod.name + "/resize",
                     ResizeVolumePatch(r.volume, r.state.from), kStrategicMerge);
  }
  events_.Record(r.pod, r.volume, AgentEvent::kShmGrowthRefused, KubeletRefusedWords(r.volume, sizes, ms, r.message));
  if (record_profiles_) profiles_.Record(r.pod, false);
}

void Grower::Collect(std::ostream& out) const {
  WriteCounterBy(out, "shmguard_agent_resizes_total",
                 "Growth in place of a /dev/shm, by result: requested (the API server took it), grown (the tmpfs was "
                 "remounted larger), refused (by the kubelet, or nothing to grow within), rejected (by the API "
                 "server), timed_out.",
                 "result",
                 {{"requested", counts_.requested},
                  {"grown", counts_.grown},
                  {"refused", counts_.refused},
                  {"rejected", counts_.rejected},
                  {"timed_out", counts_.timed_out}});
}

}  // namespace shmguard::agent
