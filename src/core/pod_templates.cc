// FindPodTemplates: a table of kinds -> paths of their pod templates, and the annotation merge.
#include "shmguard/pod_templates.h"

#include <array>
#include <string_view>

namespace shmguard {
namespace {


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

// An optional integer field (replicas, parallelism); `fallback` when absent or not an integer.
int64_t IntField(JsonNode obj, std::string_view key, int64_t fallback) {
  JsonNode v = obj.Find(key);
  return v.IsInteger() ? v.Integer() : fallback;
}

// Follows a pointer of unescaped object keys and list indexes ("/spec/replicatedJobs/0");
// absent when any step is missing.
JsonNode Walk(JsonNode root, std::string_view pointer) {
  JsonNode cur = root;
  while (cur && !pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    size_t next = pointer.find('/');
    std::string_view key = pointer.substr(0, next);
    if (cur.IsArray()) {
      size_t index = 0;
      for (char c : key) index = index * 10 + static_cast<size_t>(c - '0');
      JsonNode at;
      for (JsonNode item : cur.Items()) {
        if (index-- == 0) {
          at = item;
          break;
        }
      }
      cur = at;
    } else {
      cur = cur.Find(key);
    }
    if (next == std::string_view::npos) break;
    pointer.remove_prefix(next);
  }
  return cur;
}

Error TypeError(const std::string& pointer, std::string_view expected) {
  return MakeError(Code::kInvalidInput, "must be " + std::string(expected), pointer);
}

void MergeAnnotations(JsonNode metadata, Annotations& into) {
  for (const auto& [key, value] : metadata.Find("annotations").Members()) {
    if (key.rfind(kAnnotationPrefix, 0) == 0) into.insert_or_assign(std::string(key), value);
  }
}

// Checks a PodTemplateSpec at `pointer` and adds it to `w`.
Result<bool> AddTemplate(JsonNode object, const std::string& pointer, std::string label,
                         const Annotations& inherited, int64_t pods_together, Workload& w) {
  JsonNode tmpl = pointer.empty() ? object : Walk(object, pointer);
  if (!tmpl) return MakeError(Code::kInvalidInput, "is missing", pointer.empty() ? "/" : pointer);
  if (!tmpl.IsObject()) return TypeError(pointer, "an object");
  JsonNode spec = tmpl.Find("spec");
  if (!spec) return MakeError(Code::kInvalidInput, "has no pod spec", pointer + "/spec");
  if (!spec.IsObject()) return TypeError(pointer + "/spec", "an object");
  JsonNode metadata = tmpl.Find("metadata");
  if (metadata && !metadata.IsObject()) return TypeError(pointer + "/metadata", "an object");
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

Result<Workload> FindPodTemplates(JsonNode object) {
  if (!object.IsObject()) {
    return MakeError(Code::kInvalidInput, "a Kubernetes object must be a mapping", "/");
  }
  Workload w;
  w.api_version = object.StringMember("apiVersion");
  w.kind = object.StringMember("kind");
  JsonNode metadata = object.Find("metadata");
  if (metadata && !metadata.IsObject()) return TypeError("/metadata", "an object");
  w.namespace_name = metadata.StringMember("namespace");
  w.name = metadata.StringMember("name");
  if (w.name.empty()) w.name = metadata.StringMember("generateName");
  if (w.kind.empty()) {
    return MakeError(Code::kUnsupportedKind, "not a Kubernetes object: no kind", "/kind");
  }
  Annotations workload_annotations;  // what a controller's pod templates inherit
  if (w.kind != "Pod") MergeAnnotations(metadata, workload_annotations);

  if (w.kind == "JobSet" && w.api_version == kJobSetApiVersion) {
    JsonNode spec = object.Find("spec");
    if (!spec.IsObject()) return TypeError("/spec", "an object");
    JsonNode jobs = spec.Find("replicatedJobs");
    if (!jobs) return w;  // nothing to run
    if (!jobs.IsArray()) return TypeError("/spec/replicatedJobs", "a list");
    size_t i = 0;
    for (JsonNode rj : jobs.Items()) {
      std::string rj_pointer = "/spec/replicatedJobs/" + std::to_string(i);
      if (!rj.IsObject()) return TypeError(rj_pointer, "an object");
      JsonNode job_spec = Walk(rj, "/template/spec");
      int64_t pods = IntField(rj, "replicas", 1) * IntField(job_spec, "parallelism", 1);
      std::string_view name = rj.StringMember("name");
      std::string label = "replicatedJob " + (name.empty() ? std::to_string(i) : std::string(name));
      auto added = AddTemplate(object, rj_pointer + "/template/spec/template", label,
                               workload_annotations, pods, w);
      if (!added) return added.error();
      ++i;
    }
    return w;
  }

  for (const auto& k : kControllerKinds) {
    if (k.kind != w.kind || k.api_version != w.api_version) continue;
    int64_t pods = 1;
    if (w.kind == "Job") pods = IntField(object.Find("spec"), "parallelism", 1);
    if (w.kind == "CronJob") pods = IntField(Walk(object, "/spec/jobTemplate/spec"), "parallelism", 1);
    if (w.kind == "StatefulSet") pods = IntField(object.Find("spec"), "replicas", 1);
    w.is_pod = w.kind == "Pod";
    std::string path(k.template_path);
    auto added = AddTemplate(object, path, w.is_pod ? "pod" : "pod template",
                             w.is_pod ? Annotations{} : workload_annotations,
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
