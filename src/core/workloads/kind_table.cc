// The table of kinds: every kind shmguard reads, where its pod templates are and how its
// controller counts them (kinds.h), one line each; and what is looked up in it. Sources, per
// kind: kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go; kubeflow/trainer v1.9
// pkg/apis/kubeflow.org/v1/*_types.go and pkg/controller.v1/pytorch/envvar.go (PET_NNODES = the
// sum of replicas); kubeflow/mpi-operator pkg/apis/kubeflow/v2beta1/types.go; kubeflow/trainer
// v2 pkg/apis/trainer/v1alpha1; ray-project/kuberay ray-operator/controllers/ray/common/pod.go
// (its /dev/shm); kubernetes-sigs/lws api/leaderworkerset/v1; volcano-sh/volcano
// batch/v1alpha1/job.go; argoproj/argo-workflows pkg/apis/workflow/v1alpha1/workflow_types.go;
// kserve/kserve pkg/apis/serving/v1alpha1/servingruntime_types.go (ServingRuntimePodSpec inline
// in spec and in spec.workerSpec), pkg/apis/serving/v1beta1 (inference_service.go) and
// pkg/apis/serving/v1alpha2 (LLMInferenceService: PodSpecs in spec.template, spec.worker and
// spec.prefill; pod annotations in spec.annotations and spec.prefill.annotations).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/workloads/internal/kinds.h"

namespace shmguard::workloads {
namespace {

constexpr Part kNone{Shape::kTemplate, "", "", ""};
constexpr Part Template(std::string_view path, std::string_view label, bool optional = false) {
  return {Shape::kTemplate, path, "", label, optional};
}
constexpr Part List(std::string_view path, std::string_view item, std::string_view label,
                    std::string_view name_key = "name") {
  return {Shape::kList, path, item, label, false, name_key};
}
constexpr Part PodSpec(std::string_view path, std::string_view label, bool optional = false,
                       std::string_view annotations_at = "") {
  return {Shape::kPodSpec, path, "", label, optional, "name", annotations_at};
}
constexpr Part ReplicaMap(std::string_view path) { return {Shape::kReplicaMap, path, "/template", ""}; }
constexpr Part Argo(std::string_view path) { return {Shape::kArgo, path, "", "template"}; }

// The Ray cluster parts under `prefix`: /spec, /spec/rayClusterSpec, /spec/rayClusterConfig.
#define SHMGUARD_RAY_PARTS(prefix)                               \
  Template(prefix "/headGroupSpec/template", "headGroup", true), \
      List(prefix "/workerGroupSpecs", "/template", "workerGroup", "groupName")

// KServe's LLMInferenceService and its presets, LLMInferenceServiceConfig: a decode and a
// prefill pod spec, each with its workers, and each with the annotations of the spec it is in.
constexpr std::array<Part, 4> kLlmParts = {PodSpec("/spec/template", "template", true, "/spec"),
                                           PodSpec("/spec/worker", "worker", true, "/spec"),
                                           PodSpec("/spec/prefill/template", "prefill", true, "/spec/prefill"),
                                           PodSpec("/spec/prefill/worker", "prefill worker", true, "/spec/prefill")};

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
    {"serving.kserve.io/v1alpha1", "ServingRuntime", "servingruntimes", AdmissionRole::kValidate, Count::kServingRuntime, "",
     {PodSpec("/spec", "runtime"), PodSpec("/spec/workerSpec", "worker", true), kNone}},
    {"serving.kserve.io/v1alpha1", "ClusterServingRuntime", "clusterservingruntimes", AdmissionRole::kValidate, Count::kServingRuntime, "",
     {PodSpec("/spec", "runtime"), PodSpec("/spec/workerSpec", "worker", true), kNone}, true},
    {"serving.kserve.io/v1beta1", "InferenceService", "inferenceservices", AdmissionRole::kValidate, Count::kInferenceService, "",
     {kNone, kNone, kNone}},
    {"serving.kserve.io/v1alpha2", "LLMInferenceService", "llminferenceservices", AdmissionRole::kValidate,
     Count::kLlmInferenceService, "", kLlmParts},
    {"serving.kserve.io/v1alpha2", "LLMInferenceServiceConfig", "llminferenceserviceconfigs", AdmissionRole::kValidate,
     Count::kLlmInferenceService, "", kLlmParts},
    // Not an API kind: a document with top-level `services` and no apiVersion or kind.
    {"", "Compose", "", AdmissionRole::kNone, Count::kCompose, "", {kNone, kNone, kNone}},
};
// clang-format on
#undef SHMGUARD_RAY_PARTS

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

const KindSpec* FindKind(std::string_view api_version, std::string_view kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind && k.api_version == api_version) return &k;
  }
  return nullptr;
}

Result<const KindSpec*> LookUpKind(const std::string& api_version, const std::string& kind) {
  if (const KindSpec* k = FindKind(api_version, kind)) return k;
  std::string what = api_version.empty() ? kind : api_version + " " + kind;
  std::string versions;  // the apiVersions the table reads this kind at, if any
  for (const auto& known : kKinds) {
    if (known.kind == kind) versions.append(versions.empty() ? "" : ", ").append(known.api_version);
  }
  if (!versions.empty()) {
    return MakeError(Code::kUnsupportedKind,
                     what + " is not a version shmguard reads: it reads " + kind + " as " + versions);
  }
  return MakeError(Code::kUnsupportedKind, what + " is not a workload shmguard sizes (" + KindNames() + ")");
}

}  // namespace shmguard::workloads

namespace shmguard {

using workloads::FindKind;
using workloads::KindSpec;
using workloads::kKinds;

std::vector<KindInfo> KnownKinds() {
  std::vector<KindInfo> out;
  for (const auto& k : kKinds) out.push_back({k.api_version, k.kind, k.resource, k.role, k.cluster_scoped});
  return out;
}

AdmissionRole AdmissionRoleOf(const std::string& api_version, const std::string& kind) {
  const KindSpec* k = FindKind(api_version, kind);
  return k ? k->role : AdmissionRole::kNone;
}

}  // namespace shmguard
