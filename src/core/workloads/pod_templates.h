// Workload discovery: where the pod specs of an object are, which shmguard.io/* annotations apply
// to each, how many pods run each one together and how many processes each runs, read exactly
// as the kind's controller builds its pods. One table describes every kind: Pod, the built-in
// controllers (Job, CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet), JobSet, the
// Kubeflow jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, MXJob, JAXJob, MPIJob), Kubeflow
// Trainer runtimes, KubeRay (RayCluster, RayJob, RayService), LeaderWorkerSet, Volcano Job and
// Argo Workflows (Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow: each
// container, script or containerSet template is a pod), KServe (ServingRuntime,
// ClusterServingRuntime, InferenceService, LLMInferenceService, LLMInferenceServiceConfig); and
// Docker Compose documents, recognised
// by their content (compose.h: each service is a one-container pod).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/checks/checks.h"
#include "core/values/container_config.h"
#include "core/values/field_values.h"
#include "core/values/json_node.h"
#include "core/values/result.h"
#include "core/values/work_budget.h"

namespace shmguard {

// The name of the memory emptyDir shmguard adds for /dev/shm.
inline constexpr const char* kShmVolumeName = "dshm";

inline constexpr const char* kAnnotationPrefix = "shmguard.io/";
inline constexpr const char* kNumWorkersAnnotation = "shmguard.io/num-workers";
inline constexpr const char* kPrefetchFactorAnnotation = "shmguard.io/prefetch-factor";
inline constexpr const char* kBatchBytesAnnotation = "shmguard.io/batch-bytes";
inline constexpr const char* kProcsPerPodAnnotation = "shmguard.io/procs-per-pod";
inline constexpr const char* kNodesAnnotation = "shmguard.io/nodes";
inline constexpr const char* kModeAnnotation = "shmguard.io/mode";
inline constexpr const char* kPlanAnnotation = "shmguard.io/plan";
// "id,id": checks exempted for the workload or pod template (checks.h IDs).
inline constexpr const char* kIgnoreAnnotation = "shmguard.io/ignore";
// The workload a pod's learned size is kept under (shm_profile.h).
inline constexpr const char* kProfileAnnotation = "shmguard.io/profile";
// Every shmguard.io/ annotation shmguard reads, and each as an RFC 6901 pointer token.
inline constexpr const char* kAnnotationKeys[] = {
    kNumWorkersAnnotation, kPrefetchFactorAnnotation, kBatchBytesAnnotation, kProcsPerPodAnnotation, kNodesAnnotation,
    kModeAnnotation,       kPlanAnnotation,           kIgnoreAnnotation,     kProfileAnnotation};
inline constexpr std::string_view kAnnotationTokens[] = {
    "shmguard.io~1num-workers",   "shmguard.io~1prefetch-factor", "shmguard.io~1batch-bytes",
    "shmguard.io~1procs-per-pod", "shmguard.io~1nodes",           "shmguard.io~1mode",
    "shmguard.io~1plan",          "shmguard.io~1ignore",          "shmguard.io~1profile"};

// Where a pod's containers are within its spec: a list (a PodSpec's "/containers") or one
// container (an Argo template's "/container"). `init`: they run before the others.
struct ContainerSlot {
  std::string_view path;  // relative to the spec, unescaped keys: "/containerSet/containers"
  bool list;
  bool init;
};
inline constexpr ContainerSlot kPodSpecContainers[] = {{"/containers", true, false}, {"/initContainers", true, true}};

struct PodTemplate {
  std::string label;             // as the kind's users say it: "pod", "Worker", "workerGroup gpu"
  std::string spec_pointer;      // RFC 6901 pointer of the PodSpec: "/spec", ".../template/spec"
  std::string metadata_pointer;  // pointer of the pod metadata: "/metadata", ".../template/metadata"
  JsonNode spec;                 // the PodSpec object (an Argo template: the template)
  JsonNode metadata;             // absent when the template has no metadata
  // Where the containers are in `spec`; a PodSpec's, or an Argo template's.
  std::span<const ContainerSlot> containers = kPodSpecContainers;
  // Volumes the pod also gets from outside `spec` (an Argo Workflow's spec.volumes), after the
  // spec's own "volumes"; new volumes always go to the spec's.
  JsonNode shared_volumes;
  std::string shared_volumes_pointer;
  bool has_host_ipc = true;  // the spec has a hostIPC field (Argo templates have none)
  // The evaluation's budget (EvaluateOptions::budget), asked before each container is read;
  // nullptr: no bound.
  const WorkBudget* budget = nullptr;
  // Effective shmguard.io/* annotations: the workload's, overridden by the pod template's.
  // Values are kept as JSON (an unquoted YAML number stays a number) so the plan can say
  // "quote it" rather than guessing.
  Annotations annotations;
  // Pods that train together with this one, from the workload's shape (JobSet replicas ×
  // parallelism, the sum of a Kubeflow job's replicas, a LeaderWorkerSet group's size...); 1 for
  // a Pod. More than 1 means multi-node NCCL. `pods_source` says where it came from.
  int64_t pods_together = 1;
  std::string pods_source;
  // Processes per pod as the kind states them (PyTorchJob spec.nprocPerNode, MPIJob
  // spec.slotsPerWorker, a Trainer runtime's mlPolicy numProcPerNode): a count, "auto" or "gpu"
  // (the GPU count); "" when the kind says nothing. `procs_source` names the field.
  std::string procs_field;
  std::string procs_source;
  // False for kinds that are evaluated but never patched: KubeRay's (it builds /dev/shm itself),
  // TrainJob and KServe's (their pods are built by a controller, and patched when created).
  bool patchable = true;
  bool pods_patched_at_creation = false;  // an unpatched kind whose pods the Pod webhook patches
  // An inference server's launch is read and sized (server_plan.h); false in policy mode, whose
  // CEL does not read launches (docs/policy-mode.md): the pod is estimated as any other.
  bool servers_sized = true;
  // Non-empty when what is at /dev/shm cannot be known from the object, saying why (a TrainJob
  // whose runtime is not in the input).
  std::string shm_unknown;
  // KubeRay mounts an emptyDir {medium: Memory} at /dev/shm on the Ray container (the first),
  // sized to its memory limit, else its request, else unbounded — unless the template already
  // mounts /dev/shm or rayStartParams sets plasma-directory.
  bool operator_shm = false;
  // A KubeRay group's pod: KubeRay starts Ray in its first container (`ray start` with the
  // group's rayStartParams), whose object-store-memory, when set, is here as written.
  bool ray_node = false;
  std::string ray_object_store;
  // GPUs its containers get through resource claims (resource_claims.h: ResolveClaimGpus), by
  // container name; and the claims whose devices are not known, in words.
  std::vector<std::pair<std::string, int64_t>> claim_gpus;
  std::string claims_unknown;
  // What the ConfigMaps the input or the cluster holds give its containers (config_maps.h:
  // ResolveConfigMaps), by container name: envFrom's variables and the files configMap volumes
  // mount. Empty: nothing known beyond the spec.
  std::vector<std::pair<std::string, ContainerConfig>> container_config;
  // A Compose service as written (compose.h); `spec` is the one-container pod read from it.
  // Absent for Kubernetes kinds.
  JsonNode compose_service;
  // How its first container reaches RDMA when `spec` cannot say it (a Compose service's
  // /dev/infiniband devices): "devices /dev/infiniband"; "" otherwise.
  std::string rdma;
  // Where the memory limit is written when it is not in `spec` (a Compose service's mem_limit).
  std::string memory_limit_source;
  std::string memory_limit_pointer;  // and where it is (or would be) written
  // Its words and pointers, as the findings use them (FindPodTemplates fills them): where its
  // annotations are written (a Compose service's labels; the object's metadata when the
  // template has none), which shmguard.io/ annotations the template writes itself
  // (AnnotationPointer says where each is); what /dev/shm is called ("dshm", the volume
  // shmguard adds; "/dev/shm" for a Compose service), and what it has there with nothing
  // mounted.
  std::string annotations_pointer;
  uint32_t own_annotations = 0;  // bit i: the template itself writes kAnnotationKeys[i]
  std::string_view shm_name;
  std::string_view default_shm;
  // How this template was read, when it is not plain (a Compose service reserving every GPU).
  std::vector<Finding> findings;
  // Set when a field the template is read from is malformed: it is denied with this error.
  std::optional<Error> error;

  // Where annotation `key` (one of kAnnotationKeys) is written: the template's own when it has
  // the key, else the object's, which it inherits; a Compose service's label. Any other key:
  // annotations_pointer.
  std::string AnnotationPointer(std::string_view key) const {
    for (size_t i = 0; i < std::size(kAnnotationKeys); ++i) {
      if (key != kAnnotationKeys[i]) continue;
      const std::string token(kAnnotationTokens[i]);
      if (compose_service) return metadata_pointer + "/" + token;
      if (own_annotations >> i & 1) return metadata_pointer + "/annotations/" + token;
      return "/metadata/annotations/" + token;
    }
    return annotations_pointer;
  }
};

struct Workload {
  std::string api_version, kind, namespace_name, name;  // name falls back to generateName
  bool is_pod = false;                                  // a Pod carries its own annotations; templates get them copied
  std::vector<PodTemplate> templates;
  // How the templates were found, when it is not plain (a TrainJob with or without its
  // runtime), and what is wrong with the object itself (annotations that never reach the pods).
  std::vector<Finding> findings;
  // The pod specs a TrainJob's templates view: built from it and its runtime.
  std::shared_ptr<const nlohmann::json> built;
  // The templates are separate applications (Compose services), each judged on its own.
  bool separate_pods = false;
  // A cluster-scoped kind (ClusterTrainingRuntime, ClusterWorkflowTemplate): it has no
  // namespace, and its pods run in the namespaces of the jobs that use it.
  bool cluster_scoped = false;
};

// The runtimes an input declares, for the objects in it that use them: Trainer runtimes
// (TrainingRuntime, ClusterTrainingRuntime) for the TrainJobs that name them in
// spec.runtimeRef, and KServe's (ServingRuntime, ClusterServingRuntime) for the
// InferenceServices whose predictor names or auto-selects them.
class RuntimeCatalog {
 public:
  // Keeps a copy of `runtime` when it is one of the four runtime kinds.
  void Add(JsonNode runtime);
  // The runtime of `kind` named `name` that an object in `namespace_name` sees, or nullptr.
  const nlohmann::json* Find(std::string_view kind, std::string_view namespace_name, std::string_view name) const;
  // The KServe runtime a predictor in `namespace_name` gets, as KServe picks it
  // (pkg/apis/serving/v1beta1/predictor_model.go): the ServingRuntime named `name` in the
  // namespace, else the ClusterServingRuntime; without a name, the first one not disabled whose
  // supportedModelFormats auto-select `format` (at `version`, when given) and whose workerSpec
  // is there exactly when `multi_node`, namespaced before cluster-wide, highest priority first,
  // then in input order (KServe: newest first). nullptr when none.
  const nlohmann::json* FindServing(std::string_view namespace_name, std::string_view name, std::string_view format,
                                    std::string_view version, bool multi_node) const;
  bool empty() const { return by_key_.empty(); }

 private:
  std::map<std::string, nlohmann::json, std::less<>> by_key_;
  std::vector<std::string> serving_order_;  // keys of KServe runtimes, in input order
};

// Finds every pod spec in `object`.
// Fails with kUnsupportedKind when the object is not a kind listed above (the message lists the
// kinds from the table, or, for a known kind at another apiVersion, the versions it reads),
// and with kInvalidInput, naming the JSON pointer, when a field on the way has the wrong type
// (e.g. "spec.containers" written as a mapping, "replicatedJobs" not a list).
// A TrainJob is read as the pods of its runtime when `runtimes` has it, else from what it
// states itself (train_job.cc); an InferenceService likewise (inference_service.cc).
// REQUIRES: `object` outlives the result (it holds pointers into it).
Result<Workload> FindPodTemplates(JsonNode object, const RuntimeCatalog* runtimes = nullptr);

// What the admission webhooks do with a kind: kMutate (patched and validated: Pod, Job, CronJob,
// Deployment, StatefulSet, JobSet, the Kubeflow jobs, Trainer runtimes, LeaderWorkerSet, Volcano
// Job, Argo), kValidate (validated, never patched: the KubeRay kinds, TrainJob, KServe's), kNone (everything
// else: DaemonSets and ReplicaSets, whose pods are checked when they are created). A controller's
// template is patched at creation so the pods it makes carry their plan (copied sizing
// annotations, e.g. a Job's parallelism as shmguard.io/nodes) and the Pod webhook finds nothing
// left to do; a later UPDATE of the template is never mutated, and its pods are then patched
// one by one.
enum class AdmissionRole { kNone, kValidate, kMutate };
AdmissionRole AdmissionRoleOf(const std::string& api_version, const std::string& kind);

// Every kind FindPodTemplates reads, with its API resource (plural) and admission role: what
// the webhook configurations must register.
struct KindInfo {
  std::string_view api_version, kind, resource;
  AdmissionRole role;
  bool cluster_scoped = false;  // ClusterTrainingRuntime, ClusterWorkflowTemplate
};
std::vector<KindInfo> KnownKinds();

}  // namespace shmguard
