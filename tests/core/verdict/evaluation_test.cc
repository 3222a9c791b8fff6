// Evaluate: verdicts and the reasons behind them (docs/sources.md §1, §3, §5).
#include "core/verdict/evaluation.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "io/files/manifests.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
using test::Yaml;

json PodWith(const std::string& annotations, const std::string& spec) {
  return Yaml("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: " + annotations + "\nspec:\n" + spec);
}

// The error of an object shmguard does not read (not-a-workload, object-invalid): the core's own
// message, a value of the finding.
std::string ErrorOf(const Evaluation& ev) {
  const std::vector<Finding> all = ev.AllFindings();
  return all.empty() ? std::string() : all.front().Value("error");
}

const char* kGpuSpec = "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}}]";

TEST_CASE("Evaluate applies the namespace rules", "[evaluation]") {
  json gpu_pod = PodWith("{}", kGpuSpec);
  json cpu_pod = PodWith("{}", "  containers: [{name: t}]");
  Policy policy;  // built-in: kube-* off, ml-*/train-* enforce + requireAnnotations, * warn
  CHECK(Evaluate(gpu_pod, policy, {.namespace_name = "kube-system"}).verdict == Verdict::kSkip);
  const Evaluation off = Evaluate(gpu_pod, policy, {.namespace_name = "kube-system"});
  CHECK(test::Ids(off.AllFindings()) == std::vector<std::string>{"namespace-off"});
  CHECK(test::FindingOf(off.findings, Check::kNamespaceOff)->Value("namespace") == "kube-system");
  Evaluation ml = Evaluate(gpu_pod, policy, {.namespace_name = "ml-vision"});
  CHECK(ml.verdict == Verdict::kDeny);
  CHECK(ml.rule.mode == NamespaceMode::kEnforce);
  CHECK(test::FindingOf(ml.pods[0].findings, Check::kAnnotationsRequired)->severity == Severity::kError);
  CHECK(Evaluate(cpu_pod, policy, {.namespace_name = "ml-vision"}).verdict == Verdict::kOk);   // no GPUs: not required
  CHECK(Evaluate(gpu_pod, policy, {.namespace_name = "default"}).verdict == Verdict::kPatch);  // estimated
  CHECK(Evaluate(cpu_pod, policy, {.namespace_name = "default"}).verdict == Verdict::kOk);
  CHECK(Evaluate(gpu_pod, policy, {.namespace_name = ""}).namespace_name == "default");
}

TEST_CASE("Evaluate gives a cluster-scoped object no namespace and the rule for every namespace", "[evaluation]") {
  json cwt = Yaml(R"(
apiVersion: argoproj.io/v1alpha1
kind: ClusterWorkflowTemplate
metadata: {name: shared-train}
spec:
  templates:
  - name: train
    container:
      image: trainer
      resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
)");
  Policy policy;                              // built-in: ml-* enforce + requireAnnotations, * warn
  for (const char* ns : {"", "ml-vision"}) {  // a namespace given for it is not its own
    CAPTURE(ns);
    Evaluation ev = Evaluate(cwt, policy, {.namespace_name = ns});
    CHECK(ev.namespace_name.empty());
    CHECK(ev.rule.mode == NamespaceMode::kWarn);  // the "*" rule, not ml-*'s
    CHECK(ev.verdict == Verdict::kPatch);         // sized as an unannotated GPU pod
  }
  policy.namespaces = {{{"ml-*"}, NamespaceMode::kEnforce, true, PodSecurityLevel::kPrivileged},
                       {{"*"}, NamespaceMode::kOff, false, PodSecurityLevel::kPrivileged}};
  Evaluation off = Evaluate(cwt, policy);
  CHECK(off.verdict == Verdict::kSkip);
  CHECK(test::FindingOf(off.findings, Check::kNamespaceOff)->Number("cluster_scoped") == 1);
  CHECK(test::Ids(off.findings) == std::vector<std::string>{"namespace-off"});
  // A namespaced kind still takes its namespace's rule.
  CHECK(Evaluate(PodWith("{}", kGpuSpec), policy, {.namespace_name = "ml-a"}).rule.mode == NamespaceMode::kEnforce);
}

TEST_CASE("Evaluate skips what is not a workload and denies broken workloads", "[evaluation]") {
  Evaluation svc = Evaluate(Yaml("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"), Policy{});
  CHECK(svc.verdict == Verdict::kSkip);
  CHECK_FALSE(svc.workload);
  const std::string reasons = ErrorOf(svc);
  CHECK_THAT(reasons, Catch::StartsWith("v1 Service is not a workload shmguard sizes (Pod, Job, CronJob,"));
  const std::string list = ", " + reasons.substr(reasons.find('(') + 1);  // ", Pod, Job, ..., or a Compose file)"
  for (const KindInfo& k : KnownKinds()) {  // every kind of the table is named, and none twice
    CAPTURE(k.kind);
    if (k.kind == "Compose") continue;
    const std::string name = ", " + std::string(k.kind) + ",";
    size_t at = list.find(name);
    CHECK(at != std::string::npos);
    CHECK(list.find(name, at + 1) == std::string::npos);
  }
  CHECK_THAT(reasons, Catch::EndsWith(", or a Compose file)"));
  Evaluation old_jobset = Evaluate(Yaml("apiVersion: jobset.x-k8s.io/v1alpha1\nkind: JobSet\n"), Policy{});
  CHECK(old_jobset.verdict == Verdict::kSkip);
  CHECK(ErrorOf(old_jobset) ==
        "jobset.x-k8s.io/v1alpha1 JobSet is not a version shmguard reads: it reads JobSet as "
        "jobset.x-k8s.io/v1alpha2");
  Evaluation other_job = Evaluate(Yaml("apiVersion: batch/v2\nkind: Job\n"), Policy{});
  CHECK_THAT(ErrorOf(other_job), Catch::Contains("it reads Job as batch/v1, batch.volcano.sh/v1alpha1"));
  Evaluation no_kind = Evaluate(Yaml("foo: bar\n"), Policy{});
  CHECK(no_kind.verdict == Verdict::kSkip);
  CHECK_THAT(ErrorOf(no_kind), Catch::Contains("no kind"));
  Evaluation bad =
      Evaluate(Yaml("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec: {replicatedJobs: {a: 1}}\n"), Policy{});
  CHECK(bad.verdict == Verdict::kDeny);
  const std::vector<Finding> bad_findings = bad.AllFindings();
  CHECK(test::FindingOf(bad_findings, Check::kObjectInvalid)->pointer == "/spec/replicatedJobs");
  CHECK(test::FindingOf(bad_findings, Check::kObjectInvalid)->Value("error") == "must be a list");
  CHECK(test::Ids(bad.AllFindings()) == std::vector<std::string>{"object-invalid"});
  CHECK(bad.AllFindings()[0].pointer == "/spec/replicatedJobs");
}

TEST_CASE("Evaluate takes the most severe pod verdict for the workload", "[evaluation]") {
  json js = Yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: ok
    template: {spec: {template: {spec: {containers: [{name: a}]}}}}
  - name: bad
    template:
      spec:
        template:
          metadata: {annotations: {shmguard.io/num-workers: "x"}}
          spec: {containers: [{name: a}]}
)");
  Evaluation ev = Evaluate(js, Policy{}, {.namespace_name = "team-a"});
  REQUIRE(ev.pods.size() == 2);
  CHECK(ev.pods[0].verdict == Verdict::kOk);
  CHECK(ev.pods[1].verdict == Verdict::kDeny);
  CHECK(ev.verdict == Verdict::kDeny);
  const Finding* invalid = test::FindingOf(ev.pods[1].findings, Check::kAnnotationInvalid);
  REQUIRE(invalid != nullptr);
  CHECK(invalid->pod == "replicatedJob bad");
  CHECK(invalid->pointer ==
        "/spec/replicatedJobs/1/template/spec/template/metadata/annotations/shmguard.io~1num-workers");
}

TEST_CASE("Evaluate reads a template's shmguard.io/ignore in place of the object's, its errors in order",
          "[evaluation]") {
  json js = Yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, annotations: {shmguard.io/ignore: shm-below-need}}
spec:
  replicatedJobs:
  - name: own
    template:
      spec:
        template:
          metadata: {annotations: {shmguard.io/ignore: "first-typo, ipc-lock-missing, second-typo"}}
          spec: {containers: [{name: a, resources: {limits: {nvidia.com/gpu: 4}}}]}
  - name: inherits
    template: {spec: {template: {spec: {containers: [{name: a, resources: {limits: {nvidia.com/gpu: 4}}}]}}}}
)");
  Evaluation ev = Evaluate(js, Policy{}, {.namespace_name = "team-a"});
  REQUIRE(ev.pods.size() == 2);
  std::vector<std::string> errors;
  for (const auto& f : ev.pods[0].findings) {
    if (f.check == Check::kAnnotationInvalid) errors.push_back(f.Value("error"));
  }
  CHECK(errors == std::vector<std::string>{"\"first-typo\" is not a check ID (docs/checks.md)",
                                           "\"second-typo\" is not a check ID (docs/checks.md)"});
  // The template's list replaces the object's: its shm-below-need counts; the other template's
  // is the object's, exempted.
  auto below = [](const PodEvaluation& pe) { return test::FindingOf(pe.findings, Check::kShmBelowNeed); };
  REQUIRE(below(ev.pods[0]) != nullptr);
  REQUIRE(below(ev.pods[1]) != nullptr);
  CHECK_FALSE(below(ev.pods[0])->suppressed);
  CHECK(below(ev.pods[1])->suppressed);
}

// The warnings and errors of `findings`, with the plan a denial cites, by ID and pointer, sorted:
// what a /mutate answer can carry.
std::vector<std::string> Problems(const std::vector<Finding>& findings, bool denied) {
  std::vector<std::string> out;
  for (const auto& f : findings) {
    if (f.severity != Severity::kInfo || (denied && f.check == Check::kShmPlan)) {
      out.push_back(std::string(f.id()) + " " + f.pointer);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("Detail changes what is recorded, never the verdict, warnings, denials or patch", "[evaluation][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  int compared = 0, denied = 0;
  for (const auto& input : io::ExpandPaths({test::CorpusPath(), std::string(SOURCE_DIR) + "/examples"})) {
    REQUIRE_FALSE(input.error);
    const std::string& file = input.path;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& doc : io::ParseManifests(text.str(), file)) {
      if (!doc.object || !doc.object->Root().IsObject()) continue;
      // As written; sized; and sized past any memory limit (denied wherever there is one).
      const json written = doc.object->ToJson();
      json sized = written, huge = written;
      sized["metadata"]["annotations"]["shmguard.io/num-workers"] = "4";
      sized["metadata"]["annotations"]["shmguard.io/batch-bytes"] = "16Mi";
      huge["metadata"]["annotations"]["shmguard.io/num-workers"] = "64";
      huge["metadata"]["annotations"]["shmguard.io/batch-bytes"] = "64Gi";
      for (const json* object : {&written, static_cast<const json*>(&sized), static_cast<const json*>(&huge)}) {
        for (const char* ns : {"team-a", "ml-a"}) {
          CAPTURE(file, doc.index, ns);
          Evaluation all = Evaluate(*object, Policy{}, {.namespace_name = ns, .detail = Detail::kAll});
          Evaluation lean = Evaluate(*object, Policy{}, {.namespace_name = ns, .detail = Detail::kProblems});
          CHECK(lean.verdict == all.verdict);
          CHECK(lean.patch == all.patch);
          CHECK(Problems(lean.findings, false) == Problems(all.findings, false));
          CHECK(lean.RequiredBytes() == all.RequiredBytes());
          REQUIRE(lean.pods.size() == all.pods.size());
          for (size_t i = 0; i < all.pods.size(); ++i) {
            const bool deny = all.pods[i].verdict == Verdict::kDeny;
            CHECK(lean.pods[i].verdict == all.pods[i].verdict);
            CHECK(lean.pods[i].changes.empty());
            for (const auto& f : lean.pods[i].findings)
              CHECK((f.severity != Severity::kInfo || f.check == Check::kShmPlan));
            CHECK(Problems(lean.pods[i].findings, deny) == Problems(all.pods[i].findings, deny));
            if (deny) ++denied;
          }
          ++compared;
        }
      }
    }
  }
  CHECK(compared >= 300);
  CHECK(denied >= 10);
}

}  // namespace
}  // namespace shmguard

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("Evaluate sizes training workloads from their own fields and copies annotations onto templates",
          "[evaluation]") {
  json job = test::Yaml(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: llm, annotations: {shmguard.io/num-workers: "4", shmguard.io/batch-bytes: 64Mi}}
spec:
  nprocPerNode: gpu
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}}]}}}
    Worker:
      replicas: 3
      template:
        metadata: {annotations: {shmguard.io/batch-bytes: 32Mi}}
        spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}}]}
)");
  Evaluation ev = Evaluate(job, Policy{}, {.namespace_name = "team-a"});
  REQUIRE(ev.verdict == Verdict::kPatch);
  for (const PodEvaluation& pod : ev.pods) {
    const Finding* plan = test::FindingOf(pod.findings, Check::kShmPlan);
    REQUIRE(plan != nullptr);
    CHECK(plan->Number("procs") == 8);
    CHECK(plan->Value("procs_source") == "spec.nprocPerNode gpu (8 GPUs)");
  }
  CHECK(ev.pods[0].findings.front().pod == "Master");
  json out = job.patch(ev.patch.ToJson());
  const json& worker = out["spec"]["pytorchReplicaSpecs"]["Worker"]["template"];
  CHECK(worker["metadata"]["annotations"]["shmguard.io/batch-bytes"] == "32Mi");  // the template's own wins
  CHECK(worker["metadata"]["annotations"]["shmguard.io/num-workers"] == "4");     // copied from the job
  CHECK(worker["metadata"]["annotations"]["shmguard.io/nodes"] == "4");           // 1 Master + 3 Workers
  CHECK(json::parse(worker["metadata"]["annotations"]["shmguard.io/plan"].get<std::string>())["procs"] == 8);
  CHECK(worker["spec"]["volumes"][0]["name"] == "dshm");
  CHECK(Evaluate(out, Policy{}, {.namespace_name = "team-a"}).patch.empty());
}

TEST_CASE("Evaluate counts KubeRay's own /dev/shm and never patches a Ray kind", "[evaluation]") {
  auto ray = [](const std::string& annotations, const std::string& memory, const char* field = "limits") {
    return test::Yaml("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r, annotations: " + annotations +
                      "}\nspec:\n  headGroupSpec:\n    template: {spec: {containers: [{name: head, resources: " +
                      (std::string(field) == "limits"
                           ? "{limits: {nvidia.com/gpu: 1, memory: " + memory + "}"
                           : "{limits: {nvidia.com/gpu: 1}, requests: {memory: " + memory + "}") +
                      "}}]}}\n");
  };
  Evaluation fits = Evaluate(ray("{}", "16Gi"), Policy{}, {.namespace_name = "team-a"});
  CHECK(fits.verdict == Verdict::kOk);
  CHECK(fits.patch.empty());
  REQUIRE(fits.pods.size() == 1);
  CHECK(fits.pods[0].current_shm == "emptyDir Memory 16Gi (KubeRay's shared-mem: the Ray container's memory limit)");
  // No memory limit, a 8Gi request: KubeRay gives /dev/shm 8Gi, below the 12365Mi needed.
  Evaluation big = Evaluate(ray("{shmguard.io/num-workers: \"4\", shmguard.io/batch-bytes: 1Gi}", "8Gi", "requests"),
                            Policy{}, {.namespace_name = "team-a"});
  CHECK(big.verdict == Verdict::kDeny);
  CHECK(big.patch.empty());
  const Finding* below = test::FindingOf(big.pods[0].findings, Check::kShmBelowNeed);
  REQUIRE(below != nullptr);
  CHECK(below->severity == Severity::kError);
  CHECK(below->Number("required_bytes") == 12365ll << 20);
  CHECK(below->Number("unpatched") == 1);
  CHECK(below->Number("operator_shm") == 1);  // the remedy is the Ray container's memory limit
  CHECK(below->Value("kind") == "RayCluster");
  Evaluation small = Evaluate(ray("{shmguard.io/num-workers: \"2\", shmguard.io/batch-bytes: 256Mi}", "64Gi"), Policy{},
                              {.namespace_name = "team-a"});
  CHECK(small.verdict == Verdict::kOk);
  CHECK(small.patch.empty());
}

TEST_CASE("Evaluate sizes each Argo pod template and patches the template, not the workflow", "[evaluation]") {
  json wf = test::Yaml(R"(apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: train-}
spec:
  entrypoint: main
  volumes:
  - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}
  templates:
  - {name: main, dag: {tasks: [{name: a, template: mounted}, {name: b, template: train}]}}
  - name: mounted
    container:
      image: pytorch
      resources: {limits: {nvidia.com/gpu: 1, memory: 32Gi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  - name: train
    container:
      image: pytorch
      command: [torchrun, --nproc_per_node=2, train.py]
      resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
)");
  Evaluation ev = Evaluate(wf, Policy{}, {.namespace_name = "team-a"});
  REQUIRE(ev.pods.size() == 2);
  CHECK(ev.pods[0].label == "template mounted");
  CHECK(ev.pods[0].current_shm == "emptyDir Memory 8Gi");  // from the workflow's spec.volumes
  CHECK(ev.pods[0].verdict == Verdict::kOk);
  CHECK(ev.pods[1].verdict == Verdict::kPatch);
  CHECK(ev.pods[1].current_shm == "64Mi (container default)");
  // The "dshm" name is taken by the workflow's volume: the template gets its own.
  json out = wf.patch(ev.patch.ToJson());
  const json& train = out["spec"]["templates"][2];
  CHECK(train["volumes"][0]["name"] == "dshm-1");
  CHECK(train["volumes"][0]["emptyDir"]["sizeLimit"] == "16Gi");  // 25% of 64Gi
  CHECK(train["container"]["volumeMounts"][0] == json({{"mountPath", "/dev/shm"}, {"name", "dshm-1"}}));
  CHECK_FALSE(train["container"].contains("securityContext"));  // no RDMA: no IPC_LOCK
  CHECK(train["metadata"]["annotations"].contains("shmguard.io/plan"));
  CHECK_FALSE(train.contains("hostIPC"));  // an Argo template has no such field
  CHECK(out["spec"]["volumes"].size() == 1);
  CHECK(Evaluate(out, Policy{}, {.namespace_name = "team-a"}).patch.empty());
  // Under hostIPC: always, a template without the field says why it has none.
  Policy always;
  always.host_ipc = HostIpcMode::kAlways;
  Evaluation with_always = Evaluate(wf, always, {.namespace_name = "team-a"});
  const Finding* no_host_ipc = test::FindingOf(with_always.pods[1].findings, Check::kHostIpcUnavailable);
  REQUIRE(no_host_ipc != nullptr);
  CHECK(no_host_ipc->Value("kind") == "Workflow");
}

}  // namespace
}  // namespace shmguard
