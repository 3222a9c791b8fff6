// FindPodTemplates: the table of kinds -> where their pod templates are (how their controllers
// count pods and processes is pod_counts.cc), and the annotation merge. Sources, per kind: kubernetes-sigs/jobset
// api/jobset/v1alpha2/jobset_types.go; kubeflow/trainer v1.9 pkg/apis/kubeflow.org/v1/*_types.go
// and pkg/controller.v1/pytorch/envvar.go (PET_NNODES = the sum of replicas); kubeflow/mpi-operator
// pkg/apis/kubeflow/v2beta1/types.go; kubeflow/trainer v2 pkg/apis/trainer/v1alpha1;
// ray-project/kuberay ray-operator/controllers/ray/common/pod.go (its /dev/shm);
// kubernetes-sigs/lws api/leaderworkerset/v1; volcano-sh/volcano batch/v1alpha1/job.go;
// argoproj/argo-workflows pkg/apis/workflow/v1alpha1/workflow_types.go.
#include "shmguard/pod_templates.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "kinds.h"
#include "shmguard/compose.h"
#include "shmguard/json_patch.h"
#include "train_job.h"

namespace shmguard {
namespace {

// An Argo template's containers (argoproj/argo-workflows pkg/apis/workflow/v1alpha1
// workflow_types.go: Template.Container, Script, ContainerSet, Sidecars, InitContainers).
constexpr ContainerSlot kArgoContainers[] = {{"/container", false, false},
                                             {"/script", false, false},
                                             {"/containerSet/containers", true, false},
                                             {"/sidecars", true, false},
                                             {"/initContainers", true, true}};

constexpr Part kNone{Shape::kTemplate, "", "", ""};
constexpr Part Template(std::string_view path, std::string_view label, bool optional = false) {
  return {Shape::kTemplate, path, "", label, optional};
}
constexpr Part List(std::string_view path, std::string_view item, std::string_view label,
                    std::string_view name_key = "name") {
  return {Shape::kList, path, item, label, false, name_key};
}
constexpr Part ReplicaMap(std::string_view path) { return {Shape::kReplicaMap, path, "/template", ""}; }
constexpr Part Argo(std::string_view path) { return {Shape::kArgo, path, "", "template"}; }

// The Ray cluster parts under `prefix`: /spec, /spec/rayClusterSpec, /spec/rayClusterConfig.
#define SHMGUARD_RAY_PARTS(prefix)                               \
  Template(prefix "/headGroupSpec/template", "headGroup", true), \
      List(prefix "/workerGroupSpecs", "/template", "workerGroup", "groupName")

// One kind per line, as written by hand.
// clang-format off
constexpr KindSpec kKinds[] = {
    {"v1", "Pod", "pods", AdmissionRole::kMutate, Count::kOne, "", {Part{Shape::kPod, "", "", "pod"}, kNone, kNone}},
    {"batch/v1", "Job", "jobs", AdmissionRole::kMutate, Count::kParallelism, "/spec/parallelism",
     {Template("/spec/template", "pod template"), kNone, kNone}},
    {"batch/v1", "CronJob", "cronjobs", AdmissionRole::kMutate, Count::kParallelism, "/spec/jobTemplate/spec/parallelism",
     {Template("/spec/jobTemplate/spec/template", "pod template"), kNone, kNone}},
    {"apps/v1", "Deployment", "deployments", AdmissionRole::kMutate, Count::kOne, "", {Template("/spec/template", "pod template"), kNone, kNone}},
    {"apps/v1", "StatefulSet", "statefulsets", AdmissionRole::kMutate, Count::kReplicas, "/spec/replicas",
     {Template("/spec/template", "pod template"), kNone, kNone}},
    {"apps/v1", "DaemonSet", "daemonsets", AdmissionRole::kNone, Count::kOne, "", {Template("/spec/template", "pod template"), kNone, kNone}},
    {"apps/v1", "ReplicaSet", "replicasets", AdmissionRole::kNone, Count::kOne, "", {Template("/spec/template", "pod template"), kNone, kNone}},
    {"jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", AdmissionRole::kMutate, Count::kJobSet, "",
     {List("/spec/replicatedJobs", "/template/spec/template", "replicatedJob"), kNone, kNone}},
    {"kubeflow.org/v1", "PyTorchJob", "pytorchjobs", AdmissionRole::kMutate, Count::kKubeflow, "",
     {ReplicaMap("/spec/pytorchReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v1", "TFJob", "tfjobs", AdmissionRole::kMutate, Count::kKubeflow, "",
     {ReplicaMap("/spec/tfReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v1", "XGBoostJob", "xgboostjobs", AdmissionRole::kMutate, Count::kKubeflow, "",
     {ReplicaMap("/spec/xgbReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v1", "PaddleJob", "paddlejobs", AdmissionRole::kMutate, Count::kKubeflow, "",
     {ReplicaMap("/spec/paddleReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v1", "MXJob", "mxjobs", AdmissionRole::kMutate, Count::kKubeflow, "",
     {ReplicaMap("/spec/mxReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v1", "JAXJob", "jaxjobs", AdmissionRole::kMutate, Count::kKubeflow, "",
     {ReplicaMap("/spec/jaxReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v2beta1", "MPIJob", "mpijobs", AdmissionRole::kMutate, Count::kMpi, "",
     {ReplicaMap("/spec/mpiReplicaSpecs"), kNone, kNone}},
    {"kubeflow.org/v1", "MPIJob", "mpijobs", AdmissionRole::kMutate, Count::kMpi, "",
     {ReplicaMap("/spec/mpiReplicaSpecs"), kNone, kNone}},
    {"trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "trainingruntimes", AdmissionRole::kMutate, Count::kTrainerRuntime, "",
     {List("/spec/template/spec/replicatedJobs", "/template/spec/template", "replicatedJob"), kNone, kNone}},
    {"trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", AdmissionRole::kMutate, Count::kTrainerRuntime, "",
     {List("/spec/template/spec/replicatedJobs", "/template/spec/template", "replicatedJob"), kNone, kNone}, true},
    {"ray.io/v1", "RayCluster", "rayclusters", AdmissionRole::kValidate, Count::kRay, "/spec", {SHMGUARD_RAY_PARTS("/spec"), kNone}},
    {"ray.io/v1", "RayJob", "rayjobs", AdmissionRole::kValidate, Count::kRay, "/spec/rayClusterSpec",
     {SHMGUARD_RAY_PARTS("/spec/rayClusterSpec"), Template("/spec/submitterPodTemplate", "submitter", true)}},
    {"ray.io/v1", "RayService", "rayservices", AdmissionRole::kValidate, Count::kRay, "/spec/rayClusterConfig",
     {SHMGUARD_RAY_PARTS("/spec/rayClusterConfig"), kNone}},
    // KubeRay before v1.0 served the same shapes as ray.io/v1alpha1.
    {"ray.io/v1alpha1", "RayCluster", "rayclusters", AdmissionRole::kValidate, Count::kRay, "/spec", {SHMGUARD_RAY_PARTS("/spec"), kNone}},
    {"ray.io/v1alpha1", "RayJob", "rayjobs", AdmissionRole::kValidate, Count::kRay, "/spec/rayClusterSpec",
     {SHMGUARD_RAY_PARTS("/spec/rayClusterSpec"), kNone}},
    {"ray.io/v1alpha1", "RayService", "rayservices", AdmissionRole::kValidate, Count::kRay, "/spec/rayClusterConfig",
     {SHMGUARD_RAY_PARTS("/spec/rayClusterConfig"), kNone}},
    {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkersets", AdmissionRole::kMutate, Count::kLeaderWorkerSet,
     "/spec/leaderWorkerTemplate/size",
     {Template("/spec/leaderWorkerTemplate/leaderTemplate", "leader", true),
      Template("/spec/leaderWorkerTemplate/workerTemplate", "worker"), kNone}},
    {"batch.volcano.sh/v1alpha1", "Job", "jobs", AdmissionRole::kMutate, Count::kVolcano, "",
     {List("/spec/tasks", "/template", "task"), kNone, kNone}},
    {"trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs", AdmissionRole::kValidate, Count::kTrainJob, "",
     {kNone, kNone, kNone}},
    {"argoproj.io/v1alpha1", "Workflow", "workflows", AdmissionRole::kMutate, Count::kOne, "", {Argo("/spec/templates"), kNone, kNone}},
    {"argoproj.io/v1alpha1", "WorkflowTemplate", "workflowtemplates", AdmissionRole::kMutate, Count::kOne, "",
     {Argo("/spec/templates"), kNone, kNone}},
    {"argoproj.io/v1alpha1", "ClusterWorkflowTemplate", "clusterworkflowtemplates", AdmissionRole::kMutate, Count::kOne, "",
     {Argo("/spec/templates"), kNone, kNone}, true},
    {"argoproj.io/v1alpha1", "CronWorkflow", "cronworkflows", AdmissionRole::kMutate, Count::kOne, "",
     {Argo("/spec/workflowSpec/templates"), kNone, kNone}},
    // Not an API kind: a document with top-level `services` and no apiVersion or kind.
    {"", "Compose", "", AdmissionRole::kNone, Count::kCompose, "", {kNone, kNone, kNone}},
};
// clang-format on
#undef SHMGUARD_RAY_PARTS

const KindSpec* FindKind(std::string_view api_version, std::string_view kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind && k.api_version == api_version) return &k;
  }
  return nullptr;
}

void MergeAnnotations(JsonNode metadata, Annotations& into) {
  for (const auto& [key, value] : metadata.Find("annotations").Members()) {
    if (key.rfind(kAnnotationPrefix, 0) == 0) into.insert_or_assign(std::string(key), value);
  }
}

// Every template of `part` in `object`, in document order.
Result<std::vector<Found>> FindParts(JsonNode object, const Part& part) {
  std::vector<Found> out;
  const std::string path(part.path);
  switch (part.shape) {
    case Shape::kPod: out.push_back({"", std::string(part.label), {}, {}}); break;
    case Shape::kTemplate:
      if (!part.optional || FollowPointer(object, path)) out.push_back({path, std::string(part.label), {}, {}});
      break;
    case Shape::kReplicaMap: {
      JsonNode map = FollowPointer(object, path);
      if (!map) break;
      if (!map.IsObject()) return TypeError(path, "a mapping of replica types");
      for (const auto& [type, spec] : map.Members()) {
        std::string at = path + "/" + EscapePointerToken(type);
        if (!spec) continue;
        if (!spec.IsObject()) return TypeError(at, "an object");
        out.push_back({at + std::string(part.item), std::string(type), spec, std::string(type)});
      }
      break;
    }
    case Shape::kArgo:
    case Shape::kList: {
      JsonNode list = FollowPointer(object, path);
      if (!list) break;
      if (!list.IsArray()) return TypeError(path, "a list");
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
        out.push_back({at + std::string(part.item), label, item, name});
      }
      break;
    }
  }
  return out;
}

// Checks a PodTemplateSpec (an Argo template) at `f.pointer` and adds it to `w`.
Result<bool> AddTemplate(JsonNode object, const Part& part, const Found& f, const Annotations& inherited, Workload& w) {
  const std::string& pointer = f.pointer;
  JsonNode tmpl = pointer.empty() ? object : FollowPointer(object, pointer);
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
    t.shared_volumes = FollowPointer(object, workflow_spec + "/volumes");
    t.shared_volumes_pointer = workflow_spec + "/volumes";
    JsonNode pod_metadata = FollowPointer(object, workflow_spec + "/podMetadata");
    if (pod_metadata && !pod_metadata.IsObject()) return TypeError(workflow_spec + "/podMetadata", "an object");
    MergeAnnotations(pod_metadata, t.annotations);
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

// The kinds of the table, each name once, for the error that names an unsupported kind:
// "Pod, Job, ..., ClusterWorkflowTemplate, CronWorkflow, or a Compose file".
const std::string& KindNames() {
  static const std::string names = [] {
    std::vector<std::string_view> seen;
    std::string out;
    for (const auto& k : kKinds) {
      if (k.count == Count::kCompose || std::find(seen.begin(), seen.end(), k.kind) != seen.end()) continue;
      seen.push_back(k.kind);
      out.append(k.kind).append(", ");
    }
    return out + "or a Compose file";
  }();
  return names;
}

}  // namespace

Error TypeError(const std::string& pointer, std::string_view expected) {
  return MakeError(Code::kInvalidInput, "must be " + std::string(expected), Location::Pointer(pointer));
}

std::vector<KindInfo> KnownKinds() {
  std::vector<KindInfo> out;
  for (const auto& k : kKinds) out.push_back({k.api_version, k.kind, k.resource, k.role, k.cluster_scoped});
  return out;
}

AdmissionRole AdmissionRoleOf(const std::string& api_version, const std::string& kind) {
  const KindSpec* k = FindKind(api_version, kind);
  return k ? k->role : AdmissionRole::kNone;
}

std::string AnnotationsPointer(const PodTemplate& t) {
  if (t.compose_service) return t.metadata_pointer;  // the service's labels
  if (t.metadata_pointer.empty()) return "/metadata/annotations";
  return t.metadata_pointer + "/annotations";
}

std::string AnnotationPointer(const PodTemplate& t, const std::string& key) {
  const std::string token = EscapePointerToken(key);
  if (t.compose_service) return t.metadata_pointer + "/" + token;
  if (!t.metadata_pointer.empty() && t.metadata.Find("annotations").Find(key)) {
    return t.metadata_pointer + "/annotations/" + token;
  }
  return "/metadata/annotations/" + token;
}

Result<Workload> FindPodTemplates(JsonNode object, const RuntimeCatalog* runtimes) {
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
  const KindSpec* k = FindKind(w.api_version, w.kind);
  if (!k) {
    std::string what = w.api_version.empty() ? w.kind : w.api_version + " " + w.kind;
    std::string versions;  // the apiVersions the table reads this kind at, if any
    for (const auto& known : kKinds) {
      if (known.kind == w.kind) versions.append(versions.empty() ? "" : ", ").append(known.api_version);
    }
    if (!versions.empty()) {
      return MakeError(Code::kUnsupportedKind,
                       what + " is not a version shmguard reads: it reads " + w.kind + " as " + versions);
    }
    return MakeError(Code::kUnsupportedKind, what + " is not a workload shmguard sizes (" + KindNames() + ")");
  }
  if (k->count == Count::kTrainJob) return ReadTrainJob(object, runtimes, std::move(w));
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
      auto added = AddTemplate(object, part, f, workload_annotations, w);
      if (!added) return added.error();
      found.push_back(std::move(f));
    }
  }
  CountPods(object, *k, found, w);
  return w;
}

}  // namespace shmguard
