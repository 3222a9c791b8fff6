// CountPods: how each kind's controller counts the pods that train together and the processes
// in each (sources: kind_table.cc's opening lines, per kind), one function a controller and one
// row each in kCounters.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "core/workloads/internal/kinds.h"

namespace shmguard::workloads {
namespace {

// An optional integer field (replicas, parallelism); `fallback` when absent or not an integer.
int64_t IntField(JsonNode obj, std::string_view key, int64_t fallback) {
  JsonNode v = obj.Find(key);
  return v.IsInteger() ? v.Integer() : fallback;
}

// A string or integer field as text ("4", "auto"); "" when absent.
std::string TextField(JsonNode v) {
  if (v.IsString()) return std::string(v.String());
  if (v.IsInteger()) return std::to_string(v.Integer());
  return {};
}

// "1 pod", "9 pods".
std::string Pods(int64_t n) { return std::to_string(n) + (n == 1 ? " pod" : " pods"); }

// A pod count for people: "9 pods (Master ×1, Worker ×8)".
std::string PodsText(int64_t total, const std::string& parts) {
  return Pods(total) + (parts.empty() ? "" : " (" + parts + ")");
}

// What a counter reads and fills: the object, its kind's line, the templates found (in the
// order of w.templates).
struct Counting {
  JsonNode object;
  const KindSpec& kind;
  const std::vector<Found>& found;
  Workload& w;

  void SetAll(int64_t pods, const std::string& source) const {
    for (auto& t : w.templates) {
      t.pods_together = pods;
      t.pods_source = source;
    }
  }
  // The sum over items of `replicas_of`, with each item's share for the source
  // ("Master ×1, Worker ×8").
  template <typename F>
  std::pair<int64_t, std::string> Sum(F replicas_of) const {
    int64_t total = 0;
    std::string parts;
    for (const auto& f : found) {
      if (!f.item) continue;
      int64_t n = replicas_of(f);
      total += n;
      parts += (parts.empty() ? "" : ", ") + f.label + " ×" + std::to_string(n);
    }
    return {total, parts};
  }
};

// Every pod on its own; or a kind read whole elsewhere (TrainJob, InferenceService, Compose).
void CountNone(const Counting&) {}

// A Job's parallelism or a StatefulSet's replicas, at the kind's count_path.
void CountAtPath(const Counting& c) {
  const std::string_view path = c.kind.count_path;
  JsonNode v = FollowPointer(c.object, path);
  int64_t n = v.IsInteger() ? v.Integer() : 1;
  c.SetAll(n, PodsText(n, std::string(path.substr(path.rfind('/') + 1))));
}

// Each replicated job: replicas × its Job's parallelism.
void CountJobSet(const Counting& c) {
  for (size_t i = 0; i < c.w.templates.size(); ++i) {
    PodTemplate& t = c.w.templates[i];
    int64_t replicas = IntField(c.found[i].item, "replicas", 1);
    int64_t parallelism = IntField(FollowPointer(c.found[i].item, "/template/spec"), "parallelism", 1);
    t.pods_together = replicas * parallelism;
    t.pods_source = Pods(t.pods_together) + " in the " + t.label;
  }
}

// As a JobSet, but mlPolicy sizes the job named "node" (Trainer's runtime framework builds
// numNodes pods of it, each running numProcPerNode processes).
void CountTrainerRuntime(const Counting& c) {
  CountJobSet(c);
  JsonNode ml = FollowPointer(c.object, "/spec/mlPolicy");
  for (size_t i = 0; i < c.w.templates.size(); ++i) {
    if (c.found[i].name != "node") continue;
    PodTemplate& t = c.w.templates[i];
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

// The sum of every replica type's replicas; PyTorchJob's nprocPerNode.
void CountKubeflow(const Counting& c) {
  auto [total, parts] = c.Sum([](const Found& f) { return IntField(f.item, "replicas", 1); });
  c.SetAll(total, PodsText(total, parts));
  JsonNode spec = c.object.Find("spec");
  std::string procs = TextField(spec.Find("nprocPerNode"));
  std::string source = "spec.nprocPerNode";
  if (procs.empty()) {  // deprecated since v1.7, still read by the operator
    procs = TextField(spec.Find("elasticPolicy").Find("nProcPerNode"));
    source = "spec.elasticPolicy.nProcPerNode";
  }
  if (procs.empty()) return;
  for (auto& t : c.w.templates) {
    t.procs_field = procs;
    t.procs_source = source;
  }
}

// Worker replicas, slotsPerWorker processes each; the launcher only runs mpirun.
void CountMpi(const Counting& c) {
  int64_t slots = IntField(c.object.Find("spec"), "slotsPerWorker", 1);
  for (size_t i = 0; i < c.w.templates.size(); ++i) {
    if (c.found[i].name != "Worker") continue;
    PodTemplate& t = c.w.templates[i];
    int64_t workers = IntField(c.found[i].item, "replicas", 1);
    t.pods_together = workers;
    t.pods_source = PodsText(workers, "Worker ×" + std::to_string(workers));
    t.procs_field = std::to_string(slots);
    t.procs_source = "spec.slotsPerWorker";
  }
}

// The head and every worker group's replicas × numOfHosts; KubeRay writes the pods' /dev/shm
// unless a group sets its plasma directory.
void CountRay(const Counting& c) {
  auto [workers, parts] =
      c.Sum([](const Found& f) { return IntField(f.item, "replicas", 1) * IntField(f.item, "numOfHosts", 1); });
  int64_t total = workers + 1;  // the head
  c.SetAll(total, PodsText(total, "headGroup ×1" + (parts.empty() ? "" : ", " + parts)));
  for (size_t i = 0; i < c.w.templates.size(); ++i) {
    PodTemplate& t = c.w.templates[i];
    t.patchable = false;
    if (t.label == "submitter") {
      t.pods_together = 1;
      t.pods_source.clear();
      continue;
    }
    JsonNode group =
        c.found[i].item ? c.found[i].item : FollowPointer(c.object, std::string(c.kind.count_path) + "/headGroupSpec");
    t.operator_shm = !group.Find("rayStartParams").Find("plasma-directory");
    t.ray_node = true;
    if (JsonNode store = group.Find("rayStartParams").Find("object-store-memory"); store.IsString()) {
      t.ray_object_store = store.String();
    }
  }
}

// A group of leaderWorkerTemplate.size pods.
void CountLeaderWorkerSet(const Counting& c) {
  JsonNode v = FollowPointer(c.object, c.kind.count_path);
  int64_t size = v.IsInteger() ? v.Integer() : 1;
  c.SetAll(size, Pods(size) + " in a group (leaderWorkerTemplate.size)");
}

// KServe runs the runtime's pod as the head and pipelineParallelSize - 1 workers
// (pkg/controller/v1beta1/inferenceservice/components/predictor.go, multiNodeProcess);
// its pods are built by KServe, which the Pod webhook patches when they are created.
void CountServingRuntime(const Counting& c) {
  if (JsonNode worker = FollowPointer(c.object, "/spec/workerSpec")) {
    const int64_t n = IntField(worker, "pipelineParallelSize", 1);
    c.SetAll(n, PodsText(n, "head ×1, workers ×" + std::to_string(n - 1) + " (workerSpec.pipelineParallelSize)"));
  }
  for (PodTemplate& t : c.w.templates) {
    t.patchable = false;
    t.pods_patched_at_creation = true;
  }
}

// The pods of an LLMInferenceService template with a worker: parallelism.GetSize() (data /
// dataLocal with data parallelism, else pipeline; KServe
// pkg/apis/serving/v1alpha2/llm_inference_service_types_func.go, GetSize).
int64_t LlmGroupSize(JsonNode parallelism) {
  const int64_t data = IntField(parallelism, "data", 1), local = IntField(parallelism, "dataLocal", 1);
  if (data > 1 || parallelism.Find("dataLocal")) {
    return std::max<int64_t>(std::max<int64_t>(data, 1) / std::max<int64_t>(local, 1), 1);
  }
  if (parallelism.Find("pipeline")) return std::max<int64_t>(IntField(parallelism, "pipeline", 1), 1);
  return 1;
}

// KServe runs a template with a worker as a LeaderWorkerSet of LlmGroupSize pods, and one
// without as a Deployment (pkg/controller/v1alpha2/llmisvc/workload_multi_node.go). Each pod
// spec is merged with the LLMInferenceServiceConfig presets it names, or KServe's defaults,
// which add the server's command and a /dev/shm of their own.
void CountLlmInferenceService(const Counting& c) {
  for (PodTemplate& t : c.w.templates) {
    // The spec the template is in, /spec or /spec/prefill: where its annotations are read
    // (the table's annotations_at), and its worker and parallelism.
    const std::string& base = t.metadata_pointer;
    if (FollowPointer(c.object, base + "/worker")) {
      t.pods_together = LlmGroupSize(FollowPointer(c.object, base + "/parallelism"));
      t.pods_source = Pods(t.pods_together) + " in a group (" + base.substr(1) + "/parallelism)";
    }
    t.patchable = false;
    t.pods_patched_at_creation = true;
    if (c.w.kind == "LLMInferenceServiceConfig") {
      // A preset: its commands are Go templates KServe renders for each service
      // ("--tensor-parallel-size={{ .Spec.Parallelism.Tensor }}"), not a launch to read.
      t.servers_sized = false;
    } else {
      t.shm_unknown = "KServe merges the LLMInferenceServiceConfig presets into it when it builds the pods";
    }
  }
}

// The sum of the tasks' replicas.
void CountVolcano(const Counting& c) {
  auto [total, parts] = c.Sum([](const Found& f) { return IntField(f.item, "replicas", 1); });
  c.SetAll(total, PodsText(total, parts));
}

// One row a controller, in the order of Count.
struct Counter {
  Count count;
  void (*fill)(const Counting&);
};
constexpr Counter kCounters[] = {
    {Count::kOne, CountNone},
    {Count::kParallelism, CountAtPath},
    {Count::kReplicas, CountAtPath},
    {Count::kJobSet, CountJobSet},
    {Count::kKubeflow, CountKubeflow},
    {Count::kMpi, CountMpi},
    {Count::kTrainerRuntime, CountTrainerRuntime},
    {Count::kRay, CountRay},
    {Count::kLeaderWorkerSet, CountLeaderWorkerSet},
    {Count::kVolcano, CountVolcano},
    {Count::kTrainJob, CountNone},
    {Count::kServingRuntime, CountServingRuntime},
    {Count::kInferenceService, CountNone},
    {Count::kLlmInferenceService, CountLlmInferenceService},
    {Count::kCompose, CountNone},
};
constexpr bool InCountOrder() {
  for (size_t i = 0; i < std::size(kCounters); ++i) {
    if (static_cast<size_t>(kCounters[i].count) != i) return false;
  }
  return true;
}
static_assert(InCountOrder() && std::size(kCounters) == static_cast<size_t>(Count::kCompose) + 1,
              "kCounters has one row for each Count, in its order");

}  // namespace

void CountPods(JsonNode object, const KindSpec& k, const std::vector<Found>& found, Workload& w) {
  kCounters[static_cast<size_t>(k.count)].fill(Counting{object, k, found, w});
}

}  // namespace shmguard::workloads
