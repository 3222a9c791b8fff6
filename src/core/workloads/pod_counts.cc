// CountPods: how each kind's controller counts the pods that train together and the processes
// in each (sources: pod_templates.cc's opening lines, per kind).
#include <algorithm>
#include <string>
#include <utility>

#include "kinds.h"

namespace shmguard {
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

}  // namespace

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
      set_all(n, PodsText(n, std::string(k.count_path.substr(k.count_path.rfind('/') + 1))));
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
        t.pods_source = Pods(t.pods_together) + " in the " + t.label;
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
        t.ray_node = true;
        if (JsonNode store = group.Find("rayStartParams").Find("object-store-memory"); store.IsString()) {
          t.ray_object_store = store.String();
        }
      }
      break;
    }
    case Count::kLeaderWorkerSet: {
      JsonNode v = FollowPointer(object, k.count_path);
      int64_t size = v.IsInteger() ? v.Integer() : 1;
      set_all(size, Pods(size) + " in a group (leaderWorkerTemplate.size)");
      break;
    }
    case Count::kServingRuntime: {
      // KServe runs the runtime's pod as the head and pipelineParallelSize - 1 workers
      // (pkg/controller/v1beta1/inferenceservice/components/predictor.go, multiNodeProcess);
      // its pods are built by KServe, which the Pod webhook patches when they are created.
      JsonNode worker = FollowPointer(object, "/spec/workerSpec");
      if (worker) {
        const int64_t n = IntField(worker, "pipelineParallelSize", 1);
        set_all(n, PodsText(n, "head ×1, workers ×" + std::to_string(n - 1) + " (workerSpec.pipelineParallelSize)"));
      }
      for (PodTemplate& t : w.templates) {
        t.patchable = false;
        t.pods_patched_at_creation = true;
      }
      break;
    }
    case Count::kLlmInferenceService: {
      // KServe runs a template with a worker as a LeaderWorkerSet of parallelism.GetSize()
      // pods (data / dataLocal with data parallelism, else pipeline), and one without as a
      // Deployment (pkg/controller/v1alpha2/llmisvc/workload_multi_node.go;
      // pkg/apis/serving/v1alpha2/llm_inference_service_types_func.go, GetSize). Each pod spec
      // is merged with the LLMInferenceServiceConfig presets it names, or KServe's defaults,
      // which add the server's command and a /dev/shm of their own.
      for (PodTemplate& t : w.templates) {
        // The spec the template is in, /spec or /spec/prefill: where its annotations are read
        // (the table's annotations_at), and its worker and parallelism.
        const std::string& base = t.metadata_pointer;
        if (FollowPointer(object, base + "/worker")) {
          JsonNode p = FollowPointer(object, base + "/parallelism");
          const int64_t data = IntField(p, "data", 1), local = IntField(p, "dataLocal", 1);
          int64_t size = 1;
          if (data > 1 || p.Find("dataLocal")) {
            size = std::max<int64_t>(std::max<int64_t>(data, 1) / std::max<int64_t>(local, 1), 1);
          } else if (p.Find("pipeline")) {
            size = std::max<int64_t>(IntField(p, "pipeline", 1), 1);
          }
          t.pods_together = size;
          t.pods_source = Pods(size) + " in a group (" + base.substr(1) + "/parallelism)";
        }
        t.patchable = false;
        t.pods_patched_at_creation = true;
        if (w.kind == "LLMInferenceServiceConfig") {
          // A preset: its commands are Go templates KServe renders for each service
          // ("--tensor-parallel-size={{ .Spec.Parallelism.Tensor }}"), not a launch to read.
          t.servers_sized = false;
        } else {
          t.shm_unknown = "KServe merges the LLMInferenceServiceConfig presets into it when it builds the pods";
        }
      }
      break;
    }
    case Count::kTrainJob:
    case Count::kInferenceService:
    case Count::kCompose: break;
    case Count::kVolcano: {
      auto [total, parts] = sum([](const Found& f) { return IntField(f.item, "replicas", 1); });
      set_all(total, PodsText(total, parts));
      break;
    }
  }
}

}  // namespace shmguard
