// FindPodTemplates: a table of kinds -> where their pod templates are and how their controllers
// count pods and processes, and the annotation merge. Sources, per kind: kubernetes-sigs/jobset
// api/jobset/v1alpha2/jobset_types.go; kubeflow/trainer v1.9 pkg/apis/kubeflow.org/v1/*_types.go
// and pkg/controller.v1/pytorch/envvar.go (PET_NNODES = the sum of replicas); kubeflow/mpi-operator
// pkg/apis/kubeflow/v2beta1/types.go; kubeflow/trainer v2 pkg/apis/trainer/v1alpha1;
// ray-project/kuberay ray-operator/controllers/ray/common/pod.go (its /dev/shm);
// kubernetes-sigs/lws api/leaderworkerset/v1; volcano-sh/volcano batch/v1alpha1/job.go;
// argoproj/argo-workflows pkg/apis/workflow/v1alpha1/workflow_types.go.
#include "shmguard/pod_templates.h"

#include <array>
#include <string_view>

#include "shmguard/compose.h"
#include "shmguard/json_patch.h"
#include "train_job.h"

namespace shmguard {
namespace {

// Where a kind keeps its PodTemplateSpecs.
enum class Shape {
  kPod,         // the object is the pod
  kTemplate,    // one PodTemplateSpec at `path`
  kReplicaMap,  // `path` maps a replica type to {replicas, template} (label: the type)
  kList,        // `path` is a list of items named by "name", each with a template at `item`
  kArgo,        // `path` is an Argo Workflow spec's templates: each container, script or
                // containerSet template is a pod; the spec's volumes and podMetadata reach it
};

// An Argo template's containers (argoproj/argo-workflows pkg/apis/workflow/v1alpha1
// workflow_types.go: Template.Container, Script, ContainerSet, Sidecars, InitContainers).
constexpr ContainerSlot kArgoContainers[] = {{"/container", false, false},
                                             {"/script", false, false},
                                             {"/containerSet/containers", true, false},
                                             {"/sidecars", true, false},
                                             {"/initContainers", true, true}};

// How the controller counts the pods that train together and the processes in each.
enum class Count {
  kOne,              // every pod on its own
  kParallelism,      // a Job's parallelism at `count_path`
  kReplicas,         // replicas at `count_path` (StatefulSet)
  kJobSet,           // each replicated job: replicas × its Job's parallelism
  kKubeflow,         // the sum of every replica type's replicas; PyTorchJob nprocPerNode
  kMpi,              // Worker replicas; slotsPerWorker processes per worker
  kTrainerRuntime,   // the trainer job: mlPolicy.numNodes and numProcPerNode; others as JobSet
  kRay,              // the head and every worker group's replicas × numOfHosts
  kLeaderWorkerSet,  // a group: leaderWorkerTemplate.size pods
  kVolcano,          // the sum of the tasks' replicas
  kTrainJob,         // no template: its runtime's pods, as the TrainJob changes them (train_job.cc)
  kCompose,          // every service on its own (compose.cc)
};

struct Part {
  Shape shape;
  std::string_view path;               // pointer of the template, the map or the list
  std::string_view item;               // kList: pointer of the template within an item
  std::string_view label;              // kTemplate: the label; kList: the prefix of the item's name
  bool optional = false;               // an absent template is no error (LeaderWorkerSet's leader)
  std::string_view name_key = "name";  // kList: the member naming an item
};

struct KindSpec {
  std::string_view api_version;  // exact apiVersion handled
  std::string_view kind;
  std::string_view resource;  // the API's plural, as webhook rules name it
  AdmissionRole role;
  Count count;
  // kParallelism, kReplicas, kLeaderWorkerSet: the count's pointer; kRay: the cluster spec's.
  std::string_view count_path;
  std::array<Part, 3> parts;    // unused ones have an empty path and shape kTemplate
  bool cluster_scoped = false;  // the object has no namespace (its pods run in others')
};

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
    {"batch/v1", "Job", "jobs", AdmissionRole::kNone, Count::kParallelism, "/spec/parallelism",
     {Template("/spec/template", "pod template"), kNone, kNone}},
    {"batch/v1", "CronJob", "cronjobs", AdmissionRole::kNone, Count::kParallelism, "/spec/jobTemplate/spec/parallelism",
     {Template("/spec/jobTemplate/spec/template", "pod template"), kNone, kNone}},
    {"apps/v1", "Deployment", "deployments", AdmissionRole::kNone, Count::kOne, "", {Template("/spec/template", "pod template"), kNone, kNone}},
    {"apps/v1", "StatefulSet", "statefulsets", AdmissionRole::kNone, Count::kReplicas, "/spec/replicas",
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

// An optional integer field (replicas, parallelism); `fallback` when absent or not an integer.
int64_t IntField(JsonNode obj, std::string_view key, int64_t fallback) {
  JsonNode v = obj.Find(key);
  return v.IsInteger() ? v.Integer() : fallback;
}

Error TypeError(const std::string& pointer, std::string_view expected) {
  return MakeError(Code::kInvalidInput, "must be " + std::string(expected), pointer);
}

void MergeAnnotations(JsonNode metadata, Annotations& into) {
  for (const auto& [key, value] : metadata.Find("annotations").Members()) {
    if (key.rfind(kAnnotationPrefix, 0) == 0) into.insert_or_assign(std::string(key), value);
  }
}

// A string or integer field as text ("4", "auto"); "" when absent.
std::string TextField(JsonNode v) {
  if (v.IsString()) return std::string(v.String());
  if (v.IsInteger()) return std::to_string(v.Integer());
  return {};
}

// One template found: where it is and what its item (list entry, replica spec) says.
struct Found {
  std::string pointer;  // of the PodTemplateSpec
  std::string label;
  JsonNode item;     // the list item or replica spec holding it; absent for kTemplate/kPod
  std::string name;  // the item's name or replica type
};

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
  if (!tmpl) return MakeError(Code::kInvalidInput, "is missing", pointer.empty() ? "/" : pointer);
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
    if (!t.spec) return MakeError(Code::kInvalidInput, "has no pod spec", t.spec_pointer);
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

// A pod count for people: "9 pods (Master ×1, Worker ×8)".
std::string PodsText(int64_t total, const std::string& parts) {
  return std::to_string(total) + " pod" + (total == 1 ? "" : "s") + (parts.empty() ? "" : " (" + parts + ")");
}

// Fills pods_together, procs and patchable of the templates of `w` (found in `found` order)
// as the kind's controller counts them.
void CountPods(JsonNode object, const KindSpec& k, const std::vector<Found>& found, Workload& w) {
  auto set_all = [&](int64_t pods, const std::string& source) {
    for (auto& t : w.templates) {
      t.pods_together = pods;
      t.pods_source = source;
    }
  };
  // The sum over items of `replicas` (× `per_item`), with each item's share for the source.
  auto sum = [&](auto replicas_of) {
    int64_t total = 0;
    std::string parts;
    for (const auto& f : found) {
      if (!f.item) continue;
      int64_t n = replicas_of(f);
      total += n;
      parts += (parts.empty() ? "" : ", ") + f.label + " ×" + std::to_string(n);
    }
    return std::pair{total, parts};
  };
  switch (k.count) {
    case Count::kOne: break;
    case Count::kParallelism:
    case Count::kReplicas: {
      JsonNode v = FollowPointer(object, k.count_path);
      int64_t n = v.IsInteger() ? v.Integer() : 1;
      set_all(n, std::to_string(n) + " pods (" + std::string(k.count_path.substr(k.count_path.rfind('/') + 1)) + ")");
      break;
    }
    case Count::kJobSet:
    case Count::kTrainerRuntime: {
      JsonNode ml = FollowPointer(object, "/spec/mlPolicy");
      for (size_t i = 0; i < w.templates.size(); ++i) {
        PodTemplate& t = w.templates[i];
        int64_t replicas = IntField(found[i].item, "replicas", 1);
        int64_t parallelism = IntField(FollowPointer(found[i].item, "/template/spec"), "parallelism", 1);
        t.pods_together = replicas * parallelism;
        t.pods_source = std::to_string(t.pods_together) + " pods in the " + t.label;
        // mlPolicy sizes the job named "node" (Trainer's runtime framework builds numNodes
        // pods of it, each running numProcPerNode processes).
        if (k.count == Count::kTrainerRuntime && found[i].name == "node") {
          t.pods_together = IntField(ml, "numNodes", 1);
          t.pods_source = std::to_string(t.pods_together) + " nodes (mlPolicy.numNodes)";
          for (const char* runtime : {"torch", "mpi"}) {
            std::string procs = TextField(ml.Find(runtime).Find("numProcPerNode"));
            if (procs.empty()) continue;
            t.procs_field = procs;
            t.procs_source = std::string("mlPolicy.") + runtime + ".numProcPerNode";
          }
        }
      }
      break;
    }
    case Count::kKubeflow: {
      auto [total, parts] = sum([](const Found& f) { return IntField(f.item, "replicas", 1); });
      set_all(total, PodsText(total, parts));
      JsonNode spec = object.Find("spec");
      std::string procs = TextField(spec.Find("nprocPerNode"));
      std::string source = "spec.nprocPerNode";
      if (procs.empty()) {  // deprecated since v1.7, still read by the operator
        procs = TextField(spec.Find("elasticPolicy").Find("nProcPerNode"));
        source = "spec.elasticPolicy.nProcPerNode";
      }
      if (!procs.empty()) {
        for (auto& t : w.templates) {
          t.procs_field = procs;
          t.procs_source = source;
        }
      }
      break;
    }
    case Count::kMpi: {
      JsonNode spec = object.Find("spec");
      int64_t slots = IntField(spec, "slotsPerWorker", 1);
      for (size_t i = 0; i < w.templates.size(); ++i) {
        if (found[i].name != "Worker") continue;  // the launcher only runs mpirun
        int64_t workers = IntField(found[i].item, "replicas", 1);
        w.templates[i].pods_together = workers;
        w.templates[i].pods_source = PodsText(workers, "Worker ×" + std::to_string(workers));
        w.templates[i].procs_field = std::to_string(slots);
        w.templates[i].procs_source = "spec.slotsPerWorker";
      }
      break;
    }
    case Count::kRay: {
      auto [workers, parts] =
          sum([](const Found& f) { return IntField(f.item, "replicas", 1) * IntField(f.item, "numOfHosts", 1); });
      int64_t total = workers + 1;  // the head
      set_all(total, PodsText(total, "headGroup ×1" + (parts.empty() ? "" : ", " + parts)));
      for (size_t i = 0; i < w.templates.size(); ++i) {
        PodTemplate& t = w.templates[i];
        t.patchable = false;
        if (t.label == "submitter") {
          t.pods_together = 1;
          t.pods_source.clear();
          continue;
        }
        JsonNode group =
            found[i].item ? found[i].item : FollowPointer(object, std::string(k.count_path) + "/headGroupSpec");
        t.operator_shm = !group.Find("rayStartParams").Find("plasma-directory");
      }
      break;
    }
    case Count::kLeaderWorkerSet: {
      JsonNode v = FollowPointer(object, k.count_path);
      int64_t size = v.IsInteger() ? v.Integer() : 1;
      set_all(size, std::to_string(size) + " pods in a group (leaderWorkerTemplate.size)");
      break;
    }
    case Count::kTrainJob:
    case Count::kCompose: break;
    case Count::kVolcano: {
      auto [total, parts] = sum([](const Found& f) { return IntField(f.item, "replicas", 1); });
      set_all(total, PodsText(total, parts));
      break;
    }
  }
}

}  // namespace

std::vector<KindInfo> KnownKinds() {
  std::vector<KindInfo> out;
  for (const auto& k : kKinds) out.push_back({k.api_version, k.kind, k.resource, k.role, k.cluster_scoped});
  return out;
}

AdmissionRole AdmissionRoleOf(const std::string& api_version, const std::string& kind) {
  const KindSpec* k = FindKind(api_version, kind);
  return k ? k->role : AdmissionRole::kNone;
}

Result<Workload> FindPodTemplates(JsonNode object, const RuntimeCatalog* runtimes) {
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
  if (w.kind.empty() && IsComposeDocument(object)) w.kind = "Compose";
  if (w.kind.empty()) {
    return MakeError(Code::kUnsupportedKind, "not a Kubernetes object (no kind) nor a Compose file (no services)",
                     "/kind");
  }
  const KindSpec* k = FindKind(w.api_version, w.kind);
  if (!k) {
    std::string what = w.api_version.empty() ? w.kind : w.api_version + " " + w.kind;
    return MakeError(Code::kUnsupportedKind,
                     what +
                         " is not a workload shmguard sizes (Pod, Job, CronJob, Deployment, StatefulSet, "
                         "DaemonSet, ReplicaSet, JobSet, PyTorchJob, TFJob, XGBoostJob, PaddleJob, MXJob, "
                         "JAXJob, MPIJob, TrainingRuntime, ClusterTrainingRuntime, TrainJob, RayCluster, RayJob, "
                         "RayService, LeaderWorkerSet, Volcano Job, Argo Workflow, WorkflowTemplate, "
                         "ClusterWorkflowTemplate, CronWorkflow, or a Compose file)");
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
