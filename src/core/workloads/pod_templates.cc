// FindPodTemplates: a kind's line of the table (kind_table.cc) -> where its pod templates are
// (how its controller counts pods and processes is pod_counts.cc), the annotation merge, and
// each template's words and pointers.
#include "core/workloads/pod_templates.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/values/json_patch.h"
#include "core/workloads/compose.h"
#include "core/workloads/internal/inference_service.h"
#include "core/workloads/internal/kinds.h"
#include "core/workloads/internal/train_job.h"

namespace shmguard::workloads {
namespace {

// An Argo template's containers (argoproj/argo-workflows pkg/apis/workflow/v1alpha1
// workflow_types.go: Template.Container, Script, ContainerSet, Sidecars, InitContainers).
constexpr ContainerSlot kArgoContainers[] = {{"/container", false, false},
                                             {"/script", false, false},
                                             {"/containerSet/containers", true, false},
                                             {"/sidecars", true, false},
                                             {"/initContainers", true, true}};

void MergeAnnotations(JsonNode metadata, Annotations& into) {
  for (const auto& [key, value] : metadata.Find("annotations").Members()) {
    if (key.rfind(kAnnotationPrefix, 0) == 0) into.insert_or_assign(std::string(key), value);
  }
}

// Every template of `part` in `object`, in document order, with the nodes it is read from.
Result<std::vector<Found>> FindParts(JsonNode object, const Part& part) {
  std::vector<Found> out;
  const std::string path(part.path);
  switch (part.shape) {
    case Shape::kPod: out.push_back({"", std::string(part.label), {}, {}, object, {}, {}}); break;
    case Shape::kTemplate:
    case Shape::kPodSpec:
      if (JsonNode node = FollowPointer(object, path); node || !part.optional) {
        // A kPodSpec's pod annotations are where the kind says, else in the node holding the spec.
        JsonNode metadata = part.annotations_at.empty() ? JsonNode() : FollowPointer(object, part.annotations_at);
        out.push_back({path, std::string(part.label), {}, {}, node, {}, metadata});
      }
      break;
    case Shape::kReplicaMap: {
      JsonNode map = FollowPointer(object, path);
      if (!map) break;
      if (!map.IsObject()) return TypeError(path, "a mapping of replica types");
      for (const auto& [type, spec] : map.Members()) {
        std::string at = path + "/" + EscapePointerToken(type);
        if (!spec) continue;
        if (!spec.IsObject()) return TypeError(at, "an object");
        out.push_back({at + std::string(part.item),
                       std::string(type),
                       spec,
                       std::string(type),
                       FollowPointer(spec, part.item),
                       {},
                       {}});
      }
      break;
    }
    case Shape::kArgo:
    case Shape::kList: {
      JsonNode list = FollowPointer(object, path);
      if (!list) break;
      if (!list.IsArray()) return TypeError(path, "a list");
      // An Argo Workflow spec's volumes and podMetadata reach each of its templates' pods.
      const std::string workflow_spec(part.path.substr(0, part.path.rfind('/')));
      JsonNode shared_volumes, pod_metadata;
      if (part.shape == Shape::kArgo) {
        shared_volumes = FollowPointer(object, workflow_spec + "/volumes");
        pod_metadata = FollowPointer(object, workflow_spec + "/podMetadata");
      }
      size_t i = 0;
      for (JsonNode item : list.Items()) {
        std::string at = path + "/" + std::to_string(i);
        if (!item.IsObject()) return TypeError(at, "an object");
        ++i;
        if (part.shape == Shape::kArgo && !item.Find("container") && !item.Find("script") &&
            !item.Find("containerSet")) {
          continue;  // steps, dag, resource, suspend...: no pod of its own
        }
        std::string name(item.StringMember(part.name_key));
        std::string label = std::string(part.label) + " " + (name.empty() ? std::to_string(i - 1) : name);
        JsonNode node = part.item.empty() ? item : FollowPointer(item, part.item);
        out.push_back({at + std::string(part.item), label, item, name, node, shared_volumes, pod_metadata});
      }
      break;
    }
  }
  return out;
}

// Checks a PodTemplateSpec (an Argo template, a PodSpec) found at `f.pointer` and
// adds it to `w`.
Result<bool> AddTemplate(const Part& part, const Found& f, const Annotations& inherited, Workload& w) {
  const std::string& pointer = f.pointer;
  JsonNode tmpl = f.node;
  if (!tmpl) return MakeError(Code::kInvalidInput, "is missing", Location::Pointer((pointer.empty() ? "/" : pointer)));
  if (!tmpl.IsObject()) return TypeError(pointer, "an object");
  PodTemplate t;
  t.label = f.label;
  t.annotations = inherited;
  if (part.shape == Shape::kArgo) {  // the template is the pod; the workflow spec adds to it
    t.spec = tmpl;
    t.spec_pointer = pointer;
    t.containers = kArgoContainers;
    t.has_host_ipc = false;
    const std::string workflow_spec(part.path.substr(0, part.path.rfind('/')));
    t.shared_volumes = f.shared_volumes;
    t.shared_volumes_pointer = workflow_spec + "/volumes";
    if (f.pod_metadata && !f.pod_metadata.IsObject()) return TypeError(workflow_spec + "/podMetadata", "an object");
    MergeAnnotations(f.pod_metadata, t.annotations);
  } else if (part.shape == Shape::kPodSpec) {  // the spec is the node; its pod annotations where the kind says
    t.spec = tmpl;
    t.spec_pointer = pointer;
    t.metadata_pointer = part.annotations_at.empty() ? pointer : std::string(part.annotations_at);
    // The node holding the annotations holds the spec too: FindParts found the spec in it.
    t.metadata = part.annotations_at.empty() ? tmpl : f.pod_metadata;
    MergeAnnotations(t.metadata, t.annotations);
    w.templates.push_back(std::move(t));
    return true;
  } else {
    t.spec = tmpl.Find("spec");
    t.spec_pointer = pointer + "/spec";
    if (!t.spec) return MakeError(Code::kInvalidInput, "has no pod spec", Location::Pointer(t.spec_pointer));
    if (!t.spec.IsObject()) return TypeError(t.spec_pointer, "an object");
  }
  JsonNode metadata = tmpl.Find("metadata");
  if (metadata && !metadata.IsObject()) return TypeError(pointer + "/metadata", "an object");
  t.metadata_pointer = pointer + "/metadata";
  t.metadata = metadata;
  MergeAnnotations(metadata, t.annotations);
  w.templates.push_back(std::move(t));
  return true;
}

}  // namespace

Error TypeError(const std::string& pointer, std::string_view expected) {
  return MakeError(Code::kInvalidInput, "must be " + std::string(expected), Location::Pointer(pointer));
}

namespace {

// Fills `t`'s words and pointers (PodTemplate::annotations_pointer and the rest).
void Name(PodTemplate& t) {
  if (t.compose_service) {
    t.annotations_pointer = t.metadata_pointer;  // the service's labels
  } else {
    t.annotations_pointer = t.metadata_pointer.empty() ? "/metadata/annotations" : t.metadata_pointer + "/annotations";
  }
  const JsonNode own = t.metadata_pointer.empty() ? JsonNode() : t.metadata.Find("annotations");
  for (size_t i = 0; own && i < std::size(kAnnotationKeys); ++i) {
    if (own.Find(kAnnotationKeys[i])) t.own_annotations |= 1u << i;
  }
  t.shm_name = t.compose_service ? "/dev/shm" : kShmVolumeName;
  t.default_shm = t.compose_service ? "64Mi (Docker's default)" : "64Mi (container default)";
}

Result<Workload> ReadKind(JsonNode object, const RuntimeCatalog* runtimes) {
  if (!object.IsObject()) {
    return MakeError(Code::kInvalidInput, "a Kubernetes object must be a mapping", Location::Pointer("/"));
  }
  Workload w;
  w.api_version = object.StringMember("apiVersion");
  w.kind = object.StringMember("kind");
  JsonNode metadata = object.Find("metadata");
  if (metadata && !metadata.IsObject()) return TypeError("/metadata", "an object");
  w.namespace_name = metadata.StringMember("namespace");
  w.name = metadata.StringMember("name");
  if (w.name.empty()) w.name = metadata.StringMember("generateName");
  if (w.kind.empty() && IsComposeDocument(object)) w.kind = "Compose";
  if (w.kind.empty()) {
    return MakeError(Code::kUnsupportedKind, "not a Kubernetes object (no kind) nor a Compose file (no services)",
                     Location::Pointer("/kind"));
  }
  auto found_kind = LookUpKind(w.api_version, w.kind);
  if (!found_kind) return found_kind.error();
  const KindSpec* k = *found_kind;
  if (k->count == Count::kTrainJob) return ReadTrainJob(object, runtimes, std::move(w));
  if (k->count == Count::kInferenceService) return ReadInferenceService(object, runtimes, std::move(w));
  if (k->count == Count::kCompose) return ReadCompose(object, std::move(w));
  w.is_pod = k->parts[0].shape == Shape::kPod;
  w.cluster_scoped = k->cluster_scoped;
  Annotations workload_annotations;  // what a controller's pod templates inherit
  if (!w.is_pod) MergeAnnotations(metadata, workload_annotations);
  if (!w.is_pod) {
    JsonNode spec = object.Find("spec");
    if (spec && !spec.IsObject()) return TypeError("/spec", "an object");
  }
  std::vector<Found> found;
  for (const Part& part : k->parts) {
    if (part.path.empty() && part.shape != Shape::kPod) continue;
    auto parts = FindParts(object, part);
    if (!parts) return parts.error();
    for (auto& f : *parts) {
      auto added = AddTemplate(part, f, workload_annotations, w);
      if (!added) return added.error();
      found.push_back(std::move(f));
    }
  }
  CountPods(object, *k, found, w);
  return w;
}

}  // namespace
}  // namespace shmguard::workloads

namespace shmguard {

Result<Workload> FindPodTemplates(JsonNode object, const RuntimeCatalog* runtimes) {
  Result<Workload> w = workloads::ReadKind(object, runtimes);
  if (w) {
    for (PodTemplate& t : w->templates) workloads::Name(t);
  }
  return w;
}

}  // namespace shmguard
