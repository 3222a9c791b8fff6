// ProfileRecorder: the workload's ShmProfile read, raised and written back.
#include "agent/profile_recorder.h"

#include "agent/event_recorder.h"
#include "core/plan/shm_profile.h"

namespace shmguard::agent {

std::string ProfileRecorder::ResolveWorkload(const AgentPod& pod) {
  if (pod.candidates.size() < 2 || pod.candidates.back().rfind("Job/", 0) != 0 || !client_) return pod.workload;
  // A Job's pod: the Job's own controller (a CronJob, a JobSet) is the workload; the pod's name
  // and labels only suggest it.
  const std::string job = pod.candidates.back().substr(4);
  const std::string key = pod.namespace_ + "/" + job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = job_owner_.find(key); it != job_owner_.end()) return it->second;
  }
  auto res = client_->Request("GET", "/apis/batch/v1/namespaces/" + pod.namespace_ + "/jobs/" + job);
  if (!res || (!res->ok() && res->status != 404)) return pod.workload;  // unknown for now: asked again later
  std::string workload = pod.candidates.back();
  const JsonNode job_object = res->ok() ? JsonNode(res->body) : JsonNode();
  for (JsonNode o : job_object.Find("metadata").Find("ownerReferences").Items()) {
    if (o.Find("controller").Bool() && !o.StringMember("kind").empty() && !o.StringMember("name").empty()) {
      workload = std::string(o.StringMember("kind")) + "/" + std::string(o.StringMember("name"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  job_owner_[key] = workload;
  return workload;
}

bool ProfileRecorder::Record(const AgentPod& pod, bool run) {
  const auto [peak, size] = pod.Peak();
  if (!client_ || peak == 0) return false;
  const std::string workload = ResolveWorkload(pod);
  table_.With([&](std::map<std::string, AgentPod>& pods) {
    if (auto it = pods.find(pod.uid); it != pods.end()) it->second.workload = workload;
  });
  const std::string collection = "/apis/shmguard.io/v1alpha1/namespaces/" + pod.namespace_ + "/shmprofiles";
  const std::string path = collection + "/" + ProfileName(workload);
  Result<kube::KubeResponse> answer = MakeError(Code::kInternal, "not sent");
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto got = client_->Request("GET", path);
    if (!got || (!got->ok() && got->status != 404)) {
      answer = std::move(got);
      break;
    }
    ObservedShm o{pod.namespace_, workload, 0, 0, 0, "", ""};
    std::string version;
    if (got->ok()) {
      auto read = ReadShmProfile(got->body);
      if (read && read->workload == workload) o = *read;
      o.namespace_name = pod.namespace_;
      version = JsonNode(got->body).Find("metadata").StringMember("resourceVersion");
    }
    if (!run && static_cast<int64_t>(peak) <= o.peak_bytes) return true;  // nothing new to say
    if (static_cast<int64_t>(peak) > o.peak_bytes) {
      o.peak_bytes = static_cast<int64_t>(peak);
      o.size_bytes = static_cast<int64_t>(size);
    }
    if (run) o.runs++;
    o.last_observed = NowRfc3339();
    o.last_pod = pod.name;
    answer = version.empty() ? client_->Request("POST", collection, ShmProfileJson(o))
                             : client_->Request("PUT", path, ShmProfileJson(o, version));
    if (answer && answer->ok()) {
      results_.Ok();
      if (run) runs_++;
      return true;
    }
    if (!answer || (answer->status != 409)) break;  // 409: written by another agent in between, or created
  }
  results_.NotTaken(FailureOf("ShmProfile " + pod.namespace_ + "/" + ProfileName(workload), answer));
  return false;
}

std::optional<uint64_t> ProfileRecorder::Sweep(int64_t now_seconds, int64_t retention_days) {
  if (!client_) return 0;
  uint64_t deleted = 0;
  std::string next;
  kube::RequestOptions page;
  page.max_body_bytes = size_t{8} << 20;  // a page of 500 profiles is ~250 KB
  page.max_values = 100'000;
  for (int pages = 0; pages < 1000; ++pages) {
    std::string path = "/apis/shmguard.io/v1alpha1/shmprofiles?limit=500";
    if (!next.empty()) path += "&continue=" + kube::QueryValue(next);
    auto got = client_->Request("GET", path, "", "application/json", page);
    if (!got || !got->ok() || !got->body.is_object()) {
      if (sink_) sink_(FailureOf("ShmProfile list (the retention sweep)", got));
      return std::nullopt;
    }
    JsonNode list(got->body);
    for (JsonNode item : list.Find("items").Items()) {
      auto o = ReadShmProfile(item);
      if (o && !ProfileExpired(*o, now_seconds, retention_days)) continue;
      JsonNode meta = item.Find("metadata");
      const std::string ns(meta.StringMember("namespace")), name(meta.StringMember("name"));
      if (ns.empty() || name.empty()) continue;
      const nlohmann::json options = {
          {"apiVersion", "v1"},
          {"kind", "DeleteOptions"},
          {"preconditions", {{"resourceVersion", std::string(meta.StringMember("resourceVersion"))}}}};
      auto res = client_->Request(
          "DELETE",
          "/apis/shmguard.io/v1alpha1/namespaces/" + kube::QueryValue(ns) + "/shmprofiles/" + kube::QueryValue(name),
          options.dump());
      if (res && res->ok()) {
        deletes_.Ok();
        deleted++;
      } else if (!res || (res->status != 404 && res->status != 409)) {
        deletes_.NotTaken(FailureOf("ShmProfile " + ns + "/" + name + " (expired)", res));
      }
    }
    next = std::string(list.Find("metadata").StringMember("continue"));
    if (next.empty()) break;
  }
  return deleted;
}

void ProfileRecorder::Collect(std::ostream& out) const {
  results_.Collect(
      out, "shmguard_agent_profile_writes_total",
      "ShmProfile writes (a higher peak, or a run), by result (ok; failed; namespace_terminating when refused "
      "as its namespace is being deleted).");
  deletes_.Collect(out, "shmguard_agent_profile_deletes_total",
                   "Deletes of ShmProfiles not observed for observed.retentionDays, by result (ok; failed; "
                   "namespace_terminating).");
  WriteSample(out, "shmguard_agent_runs_recorded_total", "counter",
              "Pods whose end was recorded as a run of their workload.", runs_);
}

}  // namespace shmguard::agent
