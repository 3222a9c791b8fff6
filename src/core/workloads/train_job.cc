// ReadTrainJob. Source: kubeflow/trainer v2.0-v2.3
// pkg/apis/trainer/v1alpha1/trainjob_types.go (spec.trainer, runtimePatches from v2.2,
// podTemplateOverrides in v2.1, podSpecOverrides in v2.0), pkg/runtime/framework/plugins/
// {torch,jobset}/ (numNodes, numProcPerNode, resourcesPerNode on the trainer job's "node"
// container), and the JobSet's trainjob-ancestor-step label naming the trainer job.
#include "core/workloads/internal/train_job.h"

#include <algorithm>
#include <utility>

#include "core/values/json_patch.h"
#include "core/workloads/internal/kinds.h"
#include "core/workloads/internal/spec_merge.h"

namespace shmguard::workloads {
namespace {

using nlohmann::json;

constexpr std::string_view kTrainerJob = "node";  // the trainer job and its main container
constexpr std::string_view kAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
constexpr std::string_view kJobsPointer = "/spec/template/spec/replicatedJobs";

// One pod-level patch of a TrainJob: the job it targets, its pod template (metadata, spec),
// and where it is.
struct JobPatch {
  std::string job;
  json pod_template;    // {metadata, spec}
  std::string pointer;  // of the pod spec it patches
};

// The pod-level patches of every API version, in order.
Result<std::vector<JobPatch>> ReadPatches(JsonNode spec) {
  std::vector<JobPatch> out;
  // v2.2+: runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template
  size_t i = 0;
  for (JsonNode p : spec.Find("runtimePatches").Items()) {
    const std::string at = "/spec/runtimePatches/" + std::to_string(i++);
    JsonNode jobs = FollowPointer(p, "/trainingRuntimeSpec/template/spec/replicatedJobs");
    if (jobs && !jobs.IsArray()) return TypeError(at + "/trainingRuntimeSpec/template/spec/replicatedJobs", "a list");
    size_t j = 0;
    for (JsonNode job : jobs.Items()) {
      const std::string job_at = at + "/trainingRuntimeSpec/template/spec/replicatedJobs/" + std::to_string(j++);
      JsonNode tmpl = FollowPointer(job, "/template/spec/template");
      if (tmpl && !tmpl.IsObject()) return TypeError(job_at + "/template/spec/template", "an object");
      if (!tmpl) continue;
      out.push_back({std::string(job.StringMember("name")), tmpl.Copy(), job_at + "/template/spec/template/spec"});
    }
  }
  // v2.1: podTemplateOverrides[] {targetJobs[].name, metadata, spec}; v2.0: podSpecOverrides[]
  // {targetJobs[].name, and the pod spec's fields beside it}.
  for (const char* field : {"podTemplateOverrides", "podSpecOverrides"}) {
    i = 0;
    for (JsonNode o : spec.Find(field).Items()) {
      const std::string at = "/spec/" + std::string(field) + "/" + std::to_string(i++);
      if (!o.IsObject()) return TypeError(at, "an object");
      json pod_template;
      if (std::string_view(field) == "podTemplateOverrides") {
        if (JsonNode m = o.Find("metadata")) pod_template["metadata"] = m.Copy();
        pod_template["spec"] = o.Find("spec") ? o.Find("spec").Copy() : json::object();
      } else {
        pod_template["spec"] = o.Copy();
        pod_template["spec"].erase("targetJobs");
      }
      const std::string pointer = std::string(field) == "podTemplateOverrides" ? at + "/spec" : at;
      for (JsonNode target : o.Find("targetJobs").Items()) {
        out.push_back({std::string(target.StringMember("name")), pod_template, pointer});
      }
    }
  }
  return out;
}

// What spec.trainer puts on the trainer job's "node" container.
json TrainerContainer(JsonNode trainer) {
  json c = {{"name", kTrainerJob}};
  for (const char* field : {"image", "command", "args", "env"}) {
    if (JsonNode v = trainer.Find(field)) c[field] = v.Copy();
  }
  if (JsonNode r = trainer.Find("resourcesPerNode")) c["resources"] = r.Copy();
  return c;
}

// Merges spec.trainer's container (resources replaced whole) and the patches for `job` into
// the pod template `tmpl`; the pointer of the first patch applied, "" when none.
std::string ApplyToJob(json& tmpl, const std::string& job, bool trainer_job, JsonNode trainer,
                       const std::vector<JobPatch>& patches) {
  if (trainer_job) {
    json container = TrainerContainer(trainer);
    json& spec = tmpl["spec"];
    if (!spec.is_object()) spec = json::object();
    json& containers = spec["containers"];
    if (!containers.is_array()) containers = json::array();
    auto node =
        std::find_if(containers.begin(), containers.end(), [](const json& c) { return ItemName(c) == kTrainerJob; });
    if (node == containers.end()) {
      containers.push_back(container);
    } else {
      if (container.contains("resources")) (*node)["resources"] = container["resources"];
      container.erase("resources");
      MergeSpec(*node, container);
    }
  }
  std::string first;
  for (const auto& p : patches) {
    if (p.job != job) continue;
    MergeSpec(tmpl, p.pod_template);
    if (first.empty()) first = p.pointer;
  }
  return first;
}

// The annotations a user may have meant for the pods but put where they never reach them
// (shmguard.io/ignore is the TrainJob's own: it exempts the TrainJob's findings).
void WarnOwnAnnotations(JsonNode object, Workload& w) {
  std::string keys, first;  // the finding points at the first of them
  for (const auto& [key, value] : object.Find("metadata").Find("annotations").Members()) {
    if (key.rfind(kAnnotationPrefix, 0) == 0 && key != kPlanAnnotation && key != kIgnoreAnnotation) {
      keys += (keys.empty() ? "" : ", ") + std::string(key);
      if (first.empty()) first = "/metadata/annotations/" + EscapePointerToken(key);
    }
  }
  if (keys.empty()) return;
  JsonNode spec = object.Find("spec");
  // Where pod annotations go instead, by the Trainer API the TrainJob uses.
  const char* api = spec.Find("podTemplateOverrides") ? "podTemplateOverrides"
                    : spec.Find("podSpecOverrides")   ? "podSpecOverrides"
                                                      : "runtimePatches";
  w.findings.push_back(Finding(Check::kTrainjobAnnotationsIgnored, first).Val("annotations", keys).Val("api", api));
}

// The runtime as the TrainJob's pods start from it, and the name of its trainer job (the one
// labelled as the trainer step, else "node"). Without the runtime: a JobSet-shaped runtime of the
// jobs the TrainJob speaks of.
std::string StartFrom(const json* runtime, const std::string& ref_kind, const std::vector<JobPatch>& patches,
                      json& built) {
  std::string trainer_job(kTrainerJob);
  if (runtime) {
    built = *runtime;
    for (JsonNode job : FollowPointer(built, kJobsPointer).Items()) {
      if (FollowPointer(job, "/template/metadata/labels").Find(kAncestorLabel).Is("trainer") &&
          job.Find("name").IsString()) {
        trainer_job = job.StringMember("name");
      }
    }
    return trainer_job;
  }
  json jobs = json::array({{{"name", trainer_job}}});
  for (const auto& p : patches) {
    bool known = std::any_of(jobs.begin(), jobs.end(), [&](const json& j) { return j["name"] == p.job; });
    if (!known) jobs.push_back({{"name", p.job}});
  }
  built = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
           {"kind", ref_kind == "TrainingRuntime" ? "TrainingRuntime" : "ClusterTrainingRuntime"},
           {"spec", {{"template", {{"spec", {{"replicatedJobs", jobs}}}}}}}};
  return trainer_job;
}

// The TrainJob's changes applied to each job of `built`, and where each job's pods were stated:
// spec.trainer for the trainer, else its first patch. A malformed runtime is left as it is here:
// FindPodTemplates names its field.
std::map<std::string, std::string> ApplyTrainJob(json& built, const std::string& trainer_job, JsonNode trainer,
                                                 const std::vector<JobPatch>& patches) {
  std::map<std::string, std::string> stated_at;
  json* jobs = ObjectAt(built, {"spec", "template", "spec"});
  if (!jobs || !jobs->contains("replicatedJobs") || !(*jobs)["replicatedJobs"].is_array()) return stated_at;
  for (json& job : (*jobs)["replicatedJobs"]) {
    json* tmpl = ObjectAt(job, {"template", "spec", "template"});
    if (!tmpl || !job["name"].is_string()) continue;
    const std::string name = job["name"];
    // spec.trainer goes to the "node" container of the trainer step and of the "node" job
    // (MPI runtimes run the launcher as a node too).
    const bool runs_trainer = name == trainer_job || name == kTrainerJob;
    std::string at = ApplyToJob(*tmpl, name, runs_trainer, trainer, patches);
    stated_at[name] = runs_trainer ? "/spec/trainer" : at;
  }
  return stated_at;
}

}  // namespace

Result<Workload> ReadTrainJob(JsonNode object, const RuntimeCatalog* runtimes, Workload w) {
  JsonNode spec = object.Find("spec");
  if (spec && !spec.IsObject()) return TypeError("/spec", "an object");
  JsonNode trainer = spec.Find("trainer");
  if (trainer && !trainer.IsObject()) return TypeError("/spec/trainer", "an object");
  JsonNode ref = spec.Find("runtimeRef");
  const std::string ref_kind =
      ref.StringMember("kind").empty() ? "ClusterTrainingRuntime" : std::string(ref.StringMember("kind"));
  const std::string ref_name(ref.StringMember("name"));
  const std::string runtime_text = ref_kind + " " + (ref_name.empty() ? "(unnamed)" : ref_name);
  auto patches = ReadPatches(spec);
  if (!patches) return patches.error();
  WarnOwnAnnotations(object, w);

  const json* runtime = runtimes ? runtimes->Find(ref_kind, w.namespace_name, ref_name) : nullptr;
  auto built = std::make_shared<json>();
  const std::string trainer_job = StartFrom(runtime, ref_kind, *patches, *built);
  const std::map<std::string, std::string> stated_at = ApplyTrainJob(*built, trainer_job, trainer, *patches);
  json* ml_policy = ObjectAt(*built, {"spec", "mlPolicy"});
  if (JsonNode nodes = trainer.Find("numNodes"); nodes && ml_policy) (*ml_policy)["numNodes"] = nodes.Copy();
  w.built = built;

  auto inner = FindPodTemplates(*w.built);
  if (!inner) {
    Error e = inner.error();
    e.message = "in " + runtime_text + " as this TrainJob changes it: " + e.message;
    return e;
  }
  for (PodTemplate& t : inner->templates) {
    const std::string job = t.label.substr(t.label.find(' ') + 1);  // "replicatedJob NAME"
    t.patchable = false;
    t.pods_patched_at_creation = true;
    auto stated = stated_at.find(job);
    if (stated != stated_at.end() && !stated->second.empty()) {
      t.spec_pointer = stated->second;
      t.metadata_pointer.clear();
    } else {
      t.label += " (" + runtime_text + ")";
    }
    if (!runtime) t.shm_unknown = runtime_text + " is not in the input";
    if (job != trainer_job && job != kTrainerJob) continue;
    if (trainer.Find("numNodes"))
      t.pods_source = std::to_string(t.pods_together) + " nodes (TrainJob spec.trainer.numNodes)";
    if (JsonNode procs = trainer.Find("numProcPerNode")) {
      t.procs_field = procs.IsInteger() ? std::to_string(procs.Integer()) : std::string(procs.String());
      t.procs_source = "TrainJob spec.trainer.numProcPerNode";
    }
  }
  w.templates = std::move(inner->templates);
  w.findings.push_back(
      Finding(Check::kTrainjobRuntime, "/spec/runtimeRef").Val("runtime", runtime_text).Num("found", runtime ? 1 : 0));
  return w;
}

}  // namespace shmguard::workloads
