// EventRecorder::Record: a new Event, or a merge patch (RFC 7386) counting a repeat.
#include "agent/event_recorder.h"

#include <ctime>

namespace shmguard::agent {

std::string NowRfc3339() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void EventRecorder::Record(const AgentPod& pod, const std::string& volume, AgentEvent which,
                           const std::string& message) {
  if (!client_) return;
  const std::string reason(InfoOf(which).reason), type(InfoOf(which).type);
  const std::string now = NowRfc3339();
  const std::string key = reason + "/" + volume;
  EventRecord known;
  table_.With([&](std::map<std::string, AgentPod>& pods) {
    if (auto it = pods.find(pod.uid); it != pods.end()) {
      if (auto e = it->second.events.find(key); e != it->second.events.end()) known = e->second;
    }
  });
  Result<kube::KubeResponse> res = MakeError(Code::kInternal, "not sent");
  EventRecord record;
  if (!known.name.empty()) {
    record = known;
    record.count++;
    nlohmann::json patch = {{"count", record.count}, {"lastTimestamp", now}, {"message", message}};
    res = client_->Request("PATCH", "/api/v1/namespaces/" + pod.namespace_ + "/events/" + record.name, patch.dump(),
                           "application/merge-patch+json");
  } else {
    nlohmann::json event = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"generateName", pod.name + ".shm-"}, {"namespace", pod.namespace_}}},
        {"involvedObject",
         {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod.name}, {"namespace", pod.namespace_}, {"uid", pod.uid}}},
        {"reason", reason},
        {"message", message},
        {"type", type},
        {"source", {{"component", "shmguard-agent"}, {"host", node_name_}}},
        {"reportingComponent", "shmguard.io/agent"},
        {"reportingInstance", node_name_},
        {"firstTimestamp", now},
        {"lastTimestamp", now},
        {"count", 1},
    };
    res = client_->Request("POST", "/api/v1/namespaces/" + pod.namespace_ + "/events", event.dump());
    if (res && res->ok()) record = {std::string(JsonNode(res->body).Find("metadata").StringMember("name")), 1};
  }
  if (!res || !res->ok()) {
    results_.NotTaken(FailureOf("Event " + reason + " " + pod.namespace_ + "/" + pod.name, res));
    return;
  }
  results_.Ok();
  table_.With([&](std::map<std::string, AgentPod>& pods) {
    if (auto it = pods.find(pod.uid); it != pods.end()) it->second.events[key] = record;
  });
}

void EventRecorder::Collect(std::ostream& out) const {
  results_.Collect(out, "shmguard_agent_events_total",
                   "Events recorded or counted again, by result (ok; failed when the API refused or could not be "
                   "reached; namespace_terminating when refused as its namespace is being deleted).");
}

}  // namespace shmguard::agent
