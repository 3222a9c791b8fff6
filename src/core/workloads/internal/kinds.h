// The table of kinds (kind_table.cc) and its types, shared by the files that read it:
// pod_templates.cc finds a kind's pod templates, pod_counts.cc counts its pods and processes as
// its controller does. Internal to the core.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/json_node.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard::workloads {

// Where a kind keeps its PodTemplateSpecs.
enum class Shape {
  kPod,         // the object is the pod
  kTemplate,    // one PodTemplateSpec at `path`
  kPodSpec,     // a PodSpec at `path`, its pod annotations in its own `annotations` (KServe's)
  kReplicaMap,  // `path` maps a replica type to {replicas, template} (label: the type)
  kList,        // `path` is a list of items named by "name", each with a template at `item`
  kArgo,        // `path` is an Argo Workflow spec's templates: each container, script or
                // containerSet template is a pod; the spec's volumes and podMetadata reach it
};

// How the controller counts the pods that train together and the processes in each.
enum class Count {
  kOne,                  // every pod on its own
  kParallelism,          // a Job's parallelism at `count_path`
  kReplicas,             // replicas at `count_path` (StatefulSet)
  kJobSet,               // each replicated job: replicas × its Job's parallelism
  kKubeflow,             // the sum of every replica type's replicas; PyTorchJob nprocPerNode
  kMpi,                  // Worker replicas; slotsPerWorker processes per worker
  kTrainerRuntime,       // the trainer job: mlPolicy.numNodes and numProcPerNode; others as JobSet
  kRay,                  // the head and every worker group's replicas × numOfHosts
  kLeaderWorkerSet,      // a group: leaderWorkerTemplate.size pods
  kVolcano,              // the sum of the tasks' replicas
  kTrainJob,             // no template: its runtime's pods, as the TrainJob changes them (train_job.cc)
  kServingRuntime,       // KServe's runtime and its workers: workerSpec.pipelineParallelSize pods
  kInferenceService,     // no template: its runtime's pods, as the predictor changes them (inference_service.cc)
  kLlmInferenceService,  // KServe's LLM workloads: a Deployment, or an LWS of parallelism.GetSize() pods
  kCompose,              // every service on its own (compose.cc)
};

struct Part {
  Shape shape = Shape::kTemplate;
  std::string_view path;               // pointer of the template, the map or the list
  std::string_view item;               // kList: pointer of the template within an item
  std::string_view label;              // kTemplate: the label; kList: the prefix of the item's name
  bool optional = false;               // an absent template is no error (LeaderWorkerSet's leader)
  std::string_view name_key = "name";  // kList: the member naming an item
  // kPodSpec: the pointer of the node whose `annotations` the pod gets; "" for the spec itself.
  std::string_view annotations_at = "";
};

struct KindSpec {
  std::string_view api_version;  // exact apiVersion handled
  std::string_view kind;
  std::string_view resource;  // the API's plural, as webhook rules name it
  AdmissionRole role;
  Count count;
  // kParallelism, kReplicas, kLeaderWorkerSet: the count's pointer; kRay: the cluster spec's.
  std::string_view count_path;
  std::array<Part, 4> parts;    // unused ones have an empty path and shape kTemplate
  bool cluster_scoped = false;  // the object has no namespace (its pods run in others')
};

// The table's line for a kind at an apiVersion, or nullptr.
const KindSpec* FindKind(std::string_view api_version, std::string_view kind);
// FindKind, or kUnsupportedKind naming the versions the table reads the kind at, else every kind
// it reads.
Result<const KindSpec*> LookUpKind(const std::string& api_version, const std::string& kind);

// One template found: where it is, what its item (list entry, replica spec) says, and the
// nodes it is read from.
struct Found {
  std::string pointer;  // of the PodTemplateSpec
  std::string label;
  JsonNode item;     // the list item or replica spec holding it; absent for kTemplate/kPod
  std::string name;  // the item's name or replica type
  JsonNode node;     // the PodTemplateSpec (an Argo template; the object for kPod); absent when missing
  // kArgo: the Workflow spec's volumes and podMetadata, which every template's pod gets.
  // kPodSpec: pod_metadata is the node its Part::annotations_at names, if any.
  JsonNode shared_volumes, pod_metadata;
};

// Fills pods_together, procs and patchable of the templates of `w` (found in `found` order)
// as the kind's controller counts them.
void CountPods(JsonNode object, const KindSpec& k, const std::vector<Found>& found, Workload& w);

// "must be EXPECTED" at `pointer`: a field of the wrong type.
Error TypeError(const std::string& pointer, std::string_view expected);

}  // namespace shmguard::workloads
