// RunAudit: formats, exit codes, stdin, Lists, Compose files, profiles and runtimes anywhere in
// the input. Hostile inputs are in audit_inputs_test.cc, the corpus in audit_corpus_test.cc.
#include "cli/commands/audit_command.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/commands/audit_run.h"
#include "cli/outputs/audit_output.h"
#include "core/workloads/compose.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::cli {
namespace {

using audit_test::Audit;
using audit_test::Run;
using nlohmann::json;

TEST_CASE("RunAudit reads a TrainJob as its runtime's pods when the runtime is anywhere in the input",
          "[audit_command]") {
  test::TempDir dir;
  std::ofstream(dir.File("a-trainjob.yaml")) << R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: j, namespace: team-a}
spec:
  runtimeRef: {name: gpu-runtime}
  trainer: {numNodes: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 8, memory: 64Gi}}}
)";
  std::ofstream(dir.File("b-runtime.yaml")) << R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: gpu-runtime}
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers: [{name: node, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
                volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 32Gi}}]
)";
  auto trainjob_record = [](const Run& r) {
    json parsed = json::parse(r.out);
    for (const auto& rec : parsed["records"]) {
      if (rec["kind"] == "TrainJob") return rec;
    }
    return json();
  };
  // The runtime's file comes after the TrainJob's: it is found all the same.
  json with = trainjob_record(Audit({dir.path()}));
  CHECK(with["verdict"] == "ok");
  CHECK(with["current_shm"] == "emptyDir Memory 32Gi");
  CHECK(with["patch"].empty());
  json alone = trainjob_record(Audit({dir.File("a-trainjob.yaml")}));
  CHECK(alone["current_shm"] == "unknown (ClusterTrainingRuntime gpu-runtime is not in the input)");
  // From stdin too, with the runtime in a file.
  std::ifstream job_file(dir.File("a-trainjob.yaml"));
  std::stringstream job_text;
  job_text << job_file.rdbuf();
  json piped = trainjob_record(Audit({"-", dir.File("b-runtime.yaml")}, "json", "deny", job_text.str()));
  CHECK(piped["current_shm"] == "emptyDir Memory 32Gi");
}

TEST_CASE("RunAudit sizes a workload from a ShmProfile anywhere in the input, as --observations does",
          "[audit_command]") {
  test::TempDir dir;
  std::ofstream(dir.File("a-job.yaml")) << R"(apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    metadata: {annotations: {shmguard.io/num-workers: "2", shmguard.io/batch-bytes: 8Mi}}
    spec:
      containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 64Gi}}}]
)";
  auto sized = [&] {
    json j = json::parse(Audit({dir.path()}).out);
    for (const auto& rec : j["records"]) {
      if (rec["kind"] == "Job") return rec["required_bytes"].get<int64_t>();
    }
    return int64_t{0};
  };
  const int64_t formula = sized();
  std::ofstream(dir.File("b-profiles.json")) << R"({"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "shmguard.io/v1alpha1", "kind": "ShmProfile", "metadata": {"name": "job.train", "namespace": "ml"},
   "spec": {"workload": "Job/train"}, "status": {"peakBytes": 4294967296, "sizeBytes": 4294967296, "runs": 1}}]})";
  // The peak, 4Gi, times the policy's margin (1.5 by default) is above the formula's size.
  CHECK(formula < 4 * (int64_t{1} << 30));
  CHECK(sized() == 6 * (int64_t{1} << 30));
}

std::string Examples() { return std::string(SOURCE_DIR) + "/examples"; }

TEST_CASE("RunAudit over examples/ gives one verdict of each kind", "[audit_command]") {
  Run r = Audit({Examples()});
  CHECK(r.code == ExitCode::kFindings);  // the denied example
  json j = json::parse(r.out);
  std::map<std::string, std::string> verdict_by_name;
  for (const auto& rec : j["records"]) verdict_by_name[rec["name"]] = rec["verdict"];
  CHECK(verdict_by_name["resnet-train"] == "patch");
  CHECK(verdict_by_name["bert-finetune"] == "ok");
  CHECK(verdict_by_name["vit-huge"] == "deny");
  CHECK(verdict_by_name["llama-pretrain"] == "patch");  // the JobSet; the Service is skipped
  // The Service, and the report example's two ShmProfiles, which size their workloads' pods.
  CHECK(j["summary"]["non_workloads"] == 3);
  CHECK(verdict_by_name["vllm-dp-7d9f8-3"] == "patch");
  for (const auto& rec : j["records"]) {
    for (const char* key : {"file", "document", "kind", "namespace", "name", "verdict", "findings", "pods", "patch"}) {
      CAPTURE(key);
      CHECK(rec.contains(key));
    }
  }
}

TEST_CASE("RunAudit exit codes follow --fail-on", "[audit_command]") {
  std::string patch_only = Examples() + "/pod-needs-patch.yaml";
  for (const char* error : {"error", "deny"}) {
    CAPTURE(error);
    CHECK(Audit({patch_only}, "table", error).code == ExitCode::kOk);
    CHECK(Audit({Examples() + "/pod-denied.yaml"}, "table", error).code == ExitCode::kFindings);
  }
  for (const char* warning : {"warning", "warn"}) {
    CAPTURE(warning);
    CHECK(Audit({patch_only}, "table", warning).code == ExitCode::kFindings);
    CHECK(Audit({Examples() + "/pod-already-right.yaml"}, "table", warning).code == ExitCode::kOk);
  }
  CHECK(Audit({Examples() + "/pod-already-right.yaml"}, "table", "info").code == ExitCode::kFindings);  // its plan
  for (const char* bad : {"", "Error", "fatal", "patch"}) CHECK_FALSE(ParseFailOn(bad).has_value());
  CHECK(Audit({}, "table").code == ExitCode::kUsage);
  for (const char* format : {"table", "json", "yaml", "patched"}) CHECK(ParseAuditFormat(format).has_value());
  CHECK_FALSE(ParseAuditFormat("xml").has_value());
  CHECK_FALSE(ParseAuditFormat("JSON").has_value());
}

TEST_CASE("RunAudit keeps going past unreadable files and broken documents", "[audit_command]") {
  Run r = Audit({"/nonexistent.yaml", Examples() + "/pod-denied.yaml", "-"}, "json", "deny",
                "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: []}\n---\nkind: [\n---\n"
                "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec: {containers: []}\n");
  CHECK(r.code == ExitCode::kUsage);
  json j = json::parse(r.out);
  CHECK(j["summary"]["error"] == 2);
  CHECK(j["summary"]["deny"] == 1);
  CHECK(j["summary"]["ok"] == 2);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent.yaml: no such file or directory"));
  CHECK_THAT(r.err, Catch::Contains("-:6: YAML"));
}

TEST_CASE("RunAudit bounds its input: devices and FIFOs refused, files and stdin over --max-file-bytes",
          "[audit_command]") {
  std::istringstream big(std::string(5000, '#'));
  std::ostringstream out, err;
  AuditOptions o{{"/dev/zero", Examples() + "/pod-denied.yaml", "-"}, AuditFormat::kJson};
  o.max_file_bytes = 4096;
  CHECK(RunAudit(o, Policy{}, big, out, err) == ExitCode::kUsage);
  json j = json::parse(out.str());
  CHECK(j["summary"]["error"] == 2);
  CHECK(j["summary"]["deny"] == 1);  // the file between them is still read
  CHECK_THAT(err.str(), Catch::Contains("/dev/zero: not a regular file or a directory (a character device)"));
  CHECK_THAT(err.str(), Catch::Contains("-: larger than the limit of 4096 bytes"));
}

TEST_CASE("RunAudit gives a document or List item that is not a mapping the verdict error, naming its line",
          "[audit_command]") {
  Run r = Audit({"-"}, "json", "error",
                "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: []}\n---\n- a\n- b\n---\n"
                "kind: PodList\napiVersion: v1\nitems:\n- 3\n");
  CHECK(r.code == ExitCode::kUsage);
  json j = json::parse(r.out);
  CHECK(j["summary"]["error"] == 2);
  CHECK(j["summary"]["deny"] == 0);
  CHECK(j["summary"]["ok"] == 1);
  CHECK_THAT(r.err, Catch::Contains("-:5: a Kubernetes object must be a mapping, not a list"));
  CHECK_THAT(r.err, Catch::Contains("-: /items/0: a Kubernetes object must be a mapping, not a number"));
}

TEST_CASE("RunAudit reads kind: List and API lists whose items have no kind", "[audit_command]") {
  json list = {{"apiVersion", "v1"},
               {"kind", "PodList"},
               {"items",
                {{{"metadata",
                   {{"name", "a"},
                    {"namespace", "team-a"},
                    {"annotations", {{"shmguard.io/num-workers", "2"}, {"shmguard.io/batch-bytes", "8Mi"}}}}},
                  {"spec", {{"containers", {{{"name", "t"}}}}}}},
                 {{"metadata", {{"name", "b"}}}, {"spec", {{"containers", json::array()}}}}}}};
  Run r = Audit({"-"}, "json", "deny", list.dump());
  json j = json::parse(r.out);
  REQUIRE(j["records"].size() == 2);
  CHECK(j["records"][0]["item"] == 0);
  CHECK(j["records"][0]["kind"] == "Pod");
  CHECK(j["records"][0]["verdict"] == "patch");
  CHECK(j["records"][0]["patch"][0]["path"].get<std::string>().rfind("/spec", 0) == 0);  // item-relative
  CHECK(j["records"][1]["verdict"] == "ok");

  Run patched = Audit({"-"}, "patched", "deny", list.dump());
  json out = json::parse(patched.out);
  CHECK(out["items"][0]["spec"]["volumes"][0]["name"] == "dshm");
  // Nothing left to patch; what is left is the warning no patch answers (no memory limit).
  Run again = Audit({"-"}, "json", "warning", patched.out);
  json records = json::parse(again.out)["records"];
  CHECK(records[0]["verdict"] == "ok");
  std::vector<std::string> warned;
  for (const auto& f : records[0]["findings"]) {
    if (f["severity"] != "info") warned.push_back(f["id"]);
  }
  CHECK(warned == std::vector<std::string>{"memory-limit-missing"});
  CHECK(again.code == ExitCode::kFindings);
  CHECK(Audit({"-"}, "json", "error", patched.out).code == ExitCode::kOk);
}

TEST_CASE("RunAudit gives a List item its records as it would any object: a Compose item one per service",
          "[audit_command]") {
  json list = {
      {"apiVersion", "v1"},
      {"kind", "List"},
      {"items",
       {{{"services",
          {{"train",
            {{"image", "trainer"},
             {"mem_limit", "64g"},
             {"labels", {{"shmguard.io/num-workers", "8"}, {"shmguard.io/batch-bytes", "64Mi"}}},
             {"deploy",
              {{"resources", {{"reservations", {{"devices", {{{"capabilities", {"gpu"}}, {"count", 1}}}}}}}}}}}},
           {"web", {{"image", "nginx"}}}}}}}}};
  Run r = Audit({"-"}, "json", "deny", list.dump());  // the List parsed whole
  json j = json::parse(r.out);
  REQUIRE(j["records"].size() == 2);
  for (const json& record : j["records"]) {
    CHECK(record["item"] == 0);
    CHECK(record["kind"] == "Compose");
  }
  CHECK(j["records"][0]["service"] == "train");
  CHECK(j["records"][0]["verdict"] == "patch");
  CHECK(j["records"][1]["service"] == "web");
  CHECK(j["records"][1]["verdict"] != "patch");

  Run table = Audit({"-"}, "table", "deny", list.dump());  // its items parsed one by one
  CHECK_THAT(table.out, Catch::Contains("service train") && Catch::Contains("service web"));
}

TEST_CASE("RunAudit counts an empty List as a document, read item by item or whole", "[audit_command]") {
  const std::string empty = R"({"apiVersion":"v1","kind":"List","items":[]})";
  Run r = Audit({"-"}, "json", "deny", empty);  // item by item
  CHECK(r.code == ExitCode::kOk);
  json j = json::parse(r.out);
  CHECK(j["records"].empty());
  CHECK(j["summary"]["documents"] == 1);
  std::istringstream in(empty);
  AuditResult full = CollectAudit({"-"}, Policy{}, in);  // whole
  CHECK(full.records.empty());
  CHECK(full.summary.documents == 1);
  CHECK(full.documents.size() == 1);
}

TEST_CASE("RunAudit -o patched applies patches and leaves other documents byte for byte", "[audit_command]") {
  std::string input = test::ReadTestdata("../../examples/pod-needs-patch.yaml") + "---\n" +
                      test::ReadTestdata("../../examples/not-a-workload.yaml");
  Run r = Audit({"-"}, "patched", "deny", input);
  CHECK_THAT(r.out, Catch::Contains(
                        "# Documents that are not workloads are skipped and counted.\napiVersion: v1\nkind: Service"));
  CHECK_THAT(r.out, Catch::Contains("sizeLimit: 14078Mi"));
  Run again = Audit({"-"}, "json", "warn", r.out);
  CHECK(again.code == ExitCode::kOk);
  json j = json::parse(again.out);
  CHECK(j["summary"]["ok"] == 1);
  CHECK(j["summary"]["skip"] == 1);
}

TEST_CASE("RunAudit reads a Compose file by its content, one record per service, beside manifests", "[audit_command]") {
  test::TempDir dir;
  {
    std::ofstream(dir.File("pod.yaml")) << test::ReadTestdata("../../examples/pod-needs-patch.yaml");
    std::ofstream(dir.File("stack.yml")) << R"(services:
  train:
    shm_size: 256m
    labels: {shmguard.io/num-workers: 4, shmguard.io/batch-bytes: 32Mi}
    gpus: [{count: 1}]
    environment: [NCCL_IB_HCA=mlx5_0]
  bad:
    shm_size: -1g
    gpus: all
  web:
    image: nginx
)";
  }
  Run r = Audit({dir.path()}, "json", "warn");
  CHECK(r.code == ExitCode::kFindings);
  json j = json::parse(r.out);
  std::map<std::string, json> by_service;
  for (const auto& rec : j["records"]) {
    if (rec.contains("service")) by_service[rec["service"]] = rec;
  }
  REQUIRE(by_service.size() == 3);
  CHECK(j["summary"]["objects"] == 4);  // the Pod and three services
  const json& train = by_service["train"];
  CHECK(train["kind"] == "Compose");
  CHECK(train["file"] == dir.File("stack.yml"));
  CHECK(train["verdict"] == "patch");
  CHECK(train["current_shm"] == "shm_size 256m (256Mi)");
  CHECK(train["patch"] == json::parse(R"([{"op":"replace","path":"/services/train/shm_size","value":")" +
                                      FormatDockerBytes(train["required_bytes"]) + R"("},
      {"op":"add","path":"/services/train/ulimits","value":{"memlock":-1}}])"));
  CHECK(by_service["bad"]["verdict"] == "deny");
  CHECK(by_service["bad"]["findings"].back()["id"] == "object-invalid");
  CHECK(by_service["bad"]["findings"].back()["pointer"] == "/services/bad/shm_size");
  CHECK(by_service["bad"]["findings"].back()["message"] ==
        "/services/bad/shm_size: \"-1g\" is not a size Docker reads (it must start with a digit): write bytes, or a "
        "number with k, m, g, t or p (\"2g\", \"512m\")");
  CHECK(by_service["bad"]["patch"].empty());
  CHECK(by_service["web"]["verdict"] == "ok");

  Run table = Audit({dir.path()}, "table");
  CHECK(table.code == ExitCode::kFindings);  // the denied service
  CHECK_THAT(table.out, Catch::Contains("service train "));
  CHECK_THAT(table.out, Catch::Contains("+ set ulimits.memlock: -1"));

  // Patched, the services that could be fixed need nothing more.
  Run patched = Audit({dir.File("stack.yml")}, "patched");
  CHECK_THAT(patched.out, Catch::Contains("memlock: -1"));
  json again = json::parse(Audit({"-"}, "json", "warn", patched.out).out);
  CHECK(again["summary"]["ok"] == 2);
  CHECK(again["summary"]["deny"] == 1);
  CHECK(again["summary"]["patch"] == 0);
}

TEST_CASE("RunAudit -o yaml and table render the same records", "[audit_command]") {
  Run y = Audit({Examples()}, "yaml");
  json from_yaml = test::Yaml(y.out);
  CHECK(from_yaml == json::parse(Audit({Examples()}, "json").out));
  Run t = Audit({Examples()}, "table");
  CHECK_THAT(t.out, Catch::Contains("Pod ml-vision/vit-huge"));
  CHECK_THAT(t.out, Catch::Contains("+ add volume dshm: emptyDir {medium: Memory, sizeLimit: 14078Mi}"));
  CHECK_THAT(t.out, Catch::Contains("3 non-workload documents skipped: Service ×1, ShmProfile ×2"));
}
}  // namespace
}  // namespace shmguard::cli
