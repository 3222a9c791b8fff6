// WorkloadCandidates, ShmProfile objects and the index of them: what the webhook learns from.
#include "core/plan/shm_profile.h"

#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/values/int128.h"

namespace shmguard {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The CronJob a Job's name says made it: "<cronjob>-<minutes since the epoch>" (the CronJob
// controller's getJobName), 8 digits or more; "" when the name is not of that form.
std::string_view CronJobOf(std::string_view job) {
  size_t dash = job.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || job.size() - dash - 1 < 8) return {};
  for (char c : job.substr(dash + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return {};
  }
  return job.substr(0, dash);
}

std::string Join(std::string_view kind, std::string_view name) {
  std::string out(kind);
  out += '/';
  out += name;
  return out;
}

}  // namespace

std::vector<std::string> WorkloadCandidates(JsonNode object, JsonNode profile) {
  JsonNode meta = object.Find("metadata");
  if (!profile) profile = meta.Find("annotations").Find(kProfileAnnotation);
  if (profile.IsString() && !profile.String().empty()) return {Join("profile", profile.String())};
  std::string_view kind = object.StringMember("kind"), name = meta.StringMember("name");
  if (!kind.empty() && kind != "Pod") {
    if (name.empty()) return {};
    return {Join(kind, name)};
  }
  JsonNode labels = meta.Find("labels");
  for (JsonNode owner : meta.Find("ownerReferences").Items()) {
    JsonNode controller = owner.Find("controller");
    if (!controller.IsBool() || !controller.Bool()) continue;
    std::string_view owner_kind = owner.StringMember("kind"), owner_name = owner.StringMember("name");
    std::string self = Join(owner_kind, owner_name);
    if (owner_kind == "ReplicaSet") {
      std::string hash = "-" + std::string(labels.StringMember("pod-template-hash"));
      if (hash.size() > 1 && EndsWith(owner_name, hash)) {
        return {Join("Deployment", owner_name.substr(0, owner_name.size() - hash.size())), self};
      }
    } else if (owner_kind == "StatefulSet") {
      // LeaderWorkerSet makes a StatefulSet per group (the leaders' and each group's workers)
      // and labels their pods with its name (sigs.k8s.io/lws api/leaderworkerset/v1
      // leaderworkerset_types.go, SetNameLabelKey).
      if (std::string_view set = labels.StringMember("leaderworkerset.sigs.k8s.io/name"); !set.empty()) {
        return {Join("LeaderWorkerSet", set), self};
      }
    } else if (owner_kind == "Job") {
      if (std::string_view set = labels.StringMember("jobset.sigs.k8s.io/jobset-name"); !set.empty()) {
        return {Join("JobSet", set), self};
      }
      if (std::string_view cron = CronJobOf(owner_name); !cron.empty()) return {Join("CronJob", cron), self};
    }
    return {self};
  }
  if (name.empty()) return {};
  return {Join("Pod", name)};
}

std::string ProfileName(std::string_view workload) {
  std::string out;
  size_t slash = workload.find('/');
  for (char c : workload.substr(0, slash)) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (slash != std::string_view::npos) {
    out += '.';
    out += workload.substr(slash + 1);
  }
  return out.substr(0, 253);
}

Result<ObservedShm> ReadShmProfile(JsonNode object) {
  if (!object.IsObject()) return MakeError(Code::kInvalidInput, "is not an object");
  if (JsonNode kind = object.Find("kind"); kind && !kind.Is(kShmProfileKind)) {
    return MakeError(Code::kInvalidInput, "is not a ShmProfile", Location::Pointer("/kind"));
  }
  ObservedShm o;
  JsonNode meta = object.Find("metadata");
  o.namespace_name = meta.StringMember("namespace");
  JsonNode workload = object.Find("spec").Find("workload");
  if (!workload.IsString() || workload.String().find('/') == std::string_view::npos) {
    return MakeError(Code::kInvalidInput, "must be a string \"Kind/name\"", Location::Pointer("/spec/workload"));
  }
  o.workload = std::string(workload.String());
  JsonNode status = object.Find("status");
  struct Count {
    const char* key;
    int64_t* into;
  };
  for (Count c : {Count{"peakBytes", &o.peak_bytes}, Count{"sizeBytes", &o.size_bytes}, Count{"runs", &o.runs}}) {
    JsonNode v = status.Find(c.key);
    if (!v) continue;
    // A byte count past any node's memory is no observation (and would overflow the margin).
    const int64_t max = c.into == &o.runs ? std::numeric_limits<int64_t>::max() : kMaxObservedBytes;
    if (!v.IsInteger() || v.Integer() < 0 || v.Integer() > max) {
      return MakeError(
          Code::kInvalidInput,
          c.into == &o.runs ? "must be a whole number >= 0" : "must be a whole number of bytes from 0 to 2^50 (1 PiB)",
          Location::Pointer(std::string("/status/") + c.key));
    }
    *c.into = v.Integer();
  }
  for (auto [key, into] : {std::pair{"lastObserved", &o.last_observed}, std::pair{"lastPod", &o.last_pod}}) {
    JsonNode v = status.Find(key);
    if (!v) continue;
    if (!v.IsString())
      return MakeError(Code::kInvalidInput, "must be a string", Location::Pointer(std::string("/status/") + key));
    *into = std::string(v.String());
  }
  return o;
}

std::string ShmProfileJson(const ObservedShm& o, std::string_view resource_version) {
  nlohmann::json meta = {{"name", ProfileName(o.workload)}, {"namespace", o.namespace_name}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  nlohmann::json j = {
      {"apiVersion", kShmProfileApiVersion},
      {"kind", kShmProfileKind},
      {"metadata", meta},
      {"spec", {{"workload", o.workload}}},
      {"status",
       {{"peakBytes", o.peak_bytes},
        {"sizeBytes", o.size_bytes},
        {"runs", o.runs},
        {"lastObserved", o.last_observed},
        {"lastPod", o.last_pod}}},
  };
  return j.dump();
}

bool ProfileExpired(const ObservedShm& o, int64_t now_seconds, int64_t retention_days) {
  auto at = ParseRfc3339Utc(o.last_observed);
  return !at || now_seconds - *at > retention_days * 86400;
}

void ObservationIndex::Put(ObservedShm o) {
  std::string key = o.namespace_name + "/" + o.workload;
  by_key_[std::move(key)] = std::move(o);
}

void ObservationIndex::Erase(std::string_view namespace_name, std::string_view workload) {
  by_key_.erase(std::string(namespace_name) + "/" + std::string(workload));
}

const ObservedShm* ObservationIndex::Find(std::string_view namespace_name,
                                          const std::vector<std::string>& workloads) const {
  std::string key;
  for (const auto& w : workloads) {
    key.assign(namespace_name);
    key += '/';
    key += w;
    if (auto it = by_key_.find(key); it != by_key_.end()) return &it->second;
  }
  return nullptr;
}

int64_t LearnedBytes(int64_t peak_bytes, int64_t margin_ppm) {
  constexpr int64_t kMi = 1 << 20;
  if (peak_bytes <= 0 || margin_ppm <= 0) return 0;
  const Int128 unit = static_cast<Int128>(kMi) * 1'000'000;  // 1 MiB, in millionths
  const Int128 bytes = (static_cast<Int128>(peak_bytes) * margin_ppm + unit - 1) / unit * kMi;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / kMi * kMi;
  return bytes > kMax ? kMax : static_cast<int64_t>(bytes);  // a ceiling, never a wrapped number
}

}  // namespace shmguard
