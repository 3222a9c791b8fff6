// FindPodTemplates: a table of kinds -> paths of their pod templates, and the annotation merge.
#include "shmguard/pod_templates.h"
#include "shmguard/json_access.h"

#include <array>
#include <string_view>

namespace shmguard {
namespace {

using nlohmann::json;

struct KindPaths {
  std::string_view api_version;  // exact apiVersion handled
  std::string_view kind;
  std::string_view template_path;  // pointer of the PodTemplateSpec; "" for a Pod itself
};

constexpr std::array<KindPaths, 7> kControllerKinds = {{
    {"batch/v1", "Job", "/spec/template"},
    {"batch/v1", "CronJob", "/spec/jobTemplate/spec/template"},
    {"apps/v1", "Deployment", "/spec/template"},
    {"apps/v1", "StatefulSet", "/spec/template"},
    {"apps/v1", "DaemonSet", "/spec/template"},
    {"apps/v1", "ReplicaSet", "/spec/template"},
    {"v1", "Pod", ""},
}};
constexpr std::string_view kJobSetApiVersion = "jobset.x-k8s.io/v1alpha2";

constexpr auto Find = FindMember;

// An optional integer field (replicas, parallelism); `fallback` when absent or not an integer.
int64_t IntField(const json* obj, std::string_view key, int64_t fallback) {
  const json* v = obj ? Find(*obj, key) : nullptr;
  if (v && v->is_number_integer()) return v->get<int64_t>();
  return fallback;
}

// Follows a pointer of unescaped object keys and list indexes ("/spec/replicatedJobs/0");
// null when any step is missing.
const json* Walk(const json& root, std::string_view pointer) {
  const json* cur = &root;
  while (cur && !pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    size_t next = pointer.find('/');
    std::string_view key = pointer.substr(0, next);
    if (cur->is_array()) {
      size_t index = 0;
      for (char c : key) index = index * 10 + static_cast<size_t>(c - '0');
      cur = index < cur->size() ? &(*cur)[index] : nullptr;
    } else {
      cur = Find(*cur, key);
    }
    if (next == std::string_view::npos) break;
    pointer.remove_prefix(next);
  }
  return cur;
}

Error TypeError(const std::string& pointer, std::string_view expected) {
  return MakeError(Code::kInvalidInput, "must be " + std::string(expected), pointer);
}

void MergeAnnotations(const json* metadata, std::map<std::string, json>& into) {
  const json* ann = metadata ? Find(*metadata, "annotations") : nullptr;
  if (!ann || !ann->is_object()) return;
  for (auto it = ann->begin(); it != ann->end(); ++it) {
    if (it.key().rfind(kAnnotationPrefix, 0) == 0) into[it.key()] = it.value();
  }
}

// Checks a PodTemplateSpec at `pointer` and adds it to `w`.
Result<bool> AddTemplate(const json& object, const std::string& pointer, std::string label,
                         const std::map<std::string, json>& inherited, int64_t pods_together,
                         Workload& w) {
  const json* tmpl = pointer.empty() ? &object : Walk(object, pointer);
  if (!tmpl) return MakeError(Code::kInvalidInput, "is missing", pointer.empty() ? "/" : pointer);
  if (!tmpl->is_object()) return TypeError(pointer, "an object");
  const json* spec = Find(*tmpl, "spec");
  if (!spec) return MakeError(Code::kInvalidInput, "has no pod spec", pointer + "/spec");
  if (!spec->is_object()) return TypeError(pointer + "/spec", "an object");
  const json* metadata = Find(*tmpl, "metadata");
  if (metadata && !metadata->is_object()) return TypeError(pointer + "/metadata", "an object");
  PodTemplate t;
  t.label = std::move(label);
  t.spec_pointer = pointer + "/spec";
  t.metadata_pointer = pointer + "/metadata";
  t.spec = spec;
  t.metadata = metadata;
  t.annotations = inherited;
  MergeAnnotations(metadata, t.annotations);
  t.pods_together = pods_together;
  w.templates.push_back(std::move(t));
  return true;
}

}  // namespace

bool IsAdmissionKind(const std::string& api_version, const std::string& kind) {
  return (api_version == "v1" && kind == "Pod") ||
         (api_version == kJobSetApiVersion && kind == "JobSet");
}

Result<Workload> FindPodTemplates(const json& object) {
  if (!object.is_object()) {
    return MakeError(Code::kInvalidInput, "a Kubernetes object must be a mapping", "/");
  }
  Workload w;
  w.api_version = StringMember(object, "apiVersion");
  w.kind = StringMember(object, "kind");
  const json* metadata = Find(object, "metadata");
  if (metadata && !metadata->is_object()) return TypeError("/metadata", "an object");
  if (metadata) {
    w.namespace_name = StringMember(*metadata, "namespace");
    w.name = StringMember(*metadata, "name");
    if (w.name.empty()) w.name = StringMember(*metadata, "generateName");
  }
  if (w.kind.empty()) {
    return MakeError(Code::kUnsupportedKind, "not a Kubernetes object: no kind", "/kind");
  }
  std::map<std::string, json> workload_annotations;
  MergeAnnotations(metadata, workload_annotations);

  if (w.kind == "JobSet" && w.api_version == kJobSetApiVersion) {
    const json* spec = Find(object, "spec");
    if (!spec || !spec->is_object()) return TypeError("/spec", "an object");
    const json* jobs = Find(*spec, "replicatedJobs");
    if (!jobs) return w;  // nothing to run
    if (!jobs->is_array()) return TypeError("/spec/replicatedJobs", "a list");
    for (size_t i = 0; i < jobs->size(); ++i) {
      const json& rj = (*jobs)[i];
      std::string rj_pointer = "/spec/replicatedJobs/" + std::to_string(i);
      if (!rj.is_object()) return TypeError(rj_pointer, "an object");
      const json* job_spec = Walk(rj, "/template/spec");
      int64_t pods = IntField(&rj, "replicas", 1) * IntField(job_spec, "parallelism", 1);
      std::string label = "replicatedJob " + (StringMember(rj, "name").empty()
                                                  ? std::to_string(i)
                                                  : StringMember(rj, "name"));
      auto added = AddTemplate(object, rj_pointer + "/template/spec/template", label,
                               workload_annotations, pods, w);
      if (!added) return added.error();
    }
    return w;
  }

  for (const auto& k : kControllerKinds) {
    if (k.kind != w.kind || k.api_version != w.api_version) continue;
    int64_t pods = 1;
    if (w.kind == "Job") pods = IntField(Find(object, "spec"), "parallelism", 1);
    if (w.kind == "CronJob") pods = IntField(Walk(object, "/spec/jobTemplate/spec"), "parallelism", 1);
    if (w.kind == "StatefulSet") pods = IntField(Find(object, "spec"), "replicas", 1);
    w.is_pod = w.kind == "Pod";
    std::string path(k.template_path);
    auto added = AddTemplate(object, path, w.is_pod ? "pod" : "pod template",
                             w.is_pod ? std::map<std::string, json>{} : workload_annotations,
                             pods, w);
    if (!added) return added.error();
    return w;
  }
  std::string what = w.api_version.empty() ? w.kind : w.api_version + " " + w.kind;
  return MakeError(Code::kUnsupportedKind,
                   what + " is not a workload shmguard sizes (Pod, JobSet jobset.x-k8s.io/v1alpha2, "
                          "Job, CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet)");
}

}  // namespace shmguard
