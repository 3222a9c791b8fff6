// RunAudit / CollectAudit: formats, exit codes, stdin, Lists, and every file of the real
// third-party corpus (test::CorpusPath, never committed).
#include "cli/audit_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/audit_output.h"
#include "io/printable.h"
#include "server/tls_fixture.h"
#include "shmguard/verdict/evaluation.h"
#include "shmguard/workloads/compose.h"
#include "test_util.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

struct Run {
  ExitCode code;
  std::string out, err;
};

Run Audit(std::vector<std::string> paths, const std::string& output = "json", const std::string& fail_on = "error",
          const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  auto format = ParseAuditFormat(output);
  REQUIRE(format.has_value());
  auto severity = ParseFailOn(fail_on);
  REQUIRE(severity.has_value());
  AuditOptions o{std::move(paths), *format, *severity};
  ExitCode code = RunAudit(o, Policy{}, in, out, err);
  return {code, out.str(), err.str()};
}

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

// Every file of the corpus: never a crash, every record explained.
TEST_CASE("CollectAudit reports or skips every document of the real-world testdata", "[audit_command][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  std::istringstream no_stdin;
  AuditResult result = CollectAudit({test::CorpusPath()}, Policy{}, no_stdin);
  CHECK(result.summary.files >= 110);
  std::map<AuditVerdict, int> by_verdict;
  std::set<std::string> files_with_records;
  for (const auto& r : result.records) {
    CAPTURE(r.file, r.document, r.kind, r.name);
    ++by_verdict[r.verdict];
    files_with_records.insert(r.file);
    if (r.verdict != AuditVerdict::kOk) REQUIRE_FALSE(r.findings.empty());
    for (const auto& f : r.findings) {
      // Every finding is located in its file (the field, or the document when the field is not
      // written), except where there is no text to read.
      if (r.verdict != AuditVerdict::kError) CHECK(f.line >= r.line);
    }
    if (r.verdict == AuditVerdict::kError) {
      CHECK(r.findings.front().finding.check == Check::kDocumentUnreadable);
      CHECK_THAT(r.findings.front().finding.Value("error"), Catch::Matches(".*:[0-9]+: .*"));
    }
  }
  // Which object gets which verdict is fixed by tests/golden/corpus-verdicts.txt; here, that
  // every kind of verdict occurs: unrendered Helm/Go templates and invalid YAML as published
  // (error), CRDs, Services and Helm values (skip), workloads of each outcome.
  for (AuditVerdict v : kAuditVerdicts) CHECK(by_verdict[v] > 0);
  // Files without any record hold no document at all (none in this data set).
  CHECK(files_with_records.size() == static_cast<size_t>(result.summary.files));
}

// Property: annotate every real workload for sizing; whatever the verdict, a patch applies with
// nlohmann's RFC 6902 implementation and the patched object needs no further patch.
TEST_CASE("Evaluate's patches over the real-world workloads apply and are idempotent", "[audit_command][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  std::istringstream no_stdin;
  AuditResult result = CollectAudit({test::CorpusPath()}, Policy{}, no_stdin);
  int patched = 0, denied = 0;
  for (const auto& doc : result.documents) {
    if (!doc.object || !doc.object->Root().IsObject()) continue;
    json obj = doc.object->ToJson();
    if (!obj.contains("kind")) continue;
    if (!obj["metadata"].is_object()) obj["metadata"] = json::object();
    if (!obj["metadata"]["annotations"].is_object()) obj["metadata"]["annotations"] = json::object();
    obj["metadata"]["annotations"]["shmguard.io/num-workers"] = "4";
    obj["metadata"]["annotations"]["shmguard.io/batch-bytes"] = "16Mi";
    Evaluation ev = Evaluate(obj, Policy{}, {.namespace_name = "team-a"});
    if (!ev.workload) continue;
    CAPTURE(doc.file, doc.index, ev.kind);
    if (ev.verdict == Verdict::kDeny) {
      ++denied;
      CHECK(ev.patch.empty());
      continue;
    }
    if (ev.verdict != Verdict::kPatch) continue;
    json out;
    REQUIRE_NOTHROW(out = obj.patch(ev.patch.ToJson()));
    Evaluation again = Evaluate(out, Policy{}, {.namespace_name = "team-a"});
    CHECK(again.patch.empty());
    CHECK(again.verdict == Verdict::kOk);
    ++patched;
  }
  // That the API server keeps every field these patches write (custom resources silently lose
  // what their schema does not define) is checked against a real one with the upstream CRDs:
  // e2e/corpus_test.go.
  CHECK(patched >= 60);
  CHECK(patched + denied >= 70);
}

}  // namespace
}  // namespace shmguard::cli

namespace shmguard::cli {
namespace {

// -o table reads a List's items one by one: what lies around them must still
// be valid JSON, so that -o table reports the same error as the formats that parse it whole.
TEST_CASE("RunAudit reports a List that is broken outside its items in every format", "[audit_command]") {
  std::string list = R"({"apiVersion": "v1", "kind": "List", "metadata": tru, "items": [)"
                     R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": []}}]})";
  for (const char* format : {"json", "yaml", "table", "patched"}) {
    CAPTURE(format);
    Run r = Audit({"-"}, format, "deny", list);
    CHECK(r.code == ExitCode::kUsage);
    CHECK_THAT(r.err, Catch::Contains("-:1: not valid JSON"));
  }
}

// What kubectl, kustomize or Argo CD would read (or refuse) is never left out in silence: a
// document written on its separator line, a file with CR line endings, a List with a trailing
// comma or a null item get the same verdict whatever the output format.
TEST_CASE("RunAudit reads or reports every document, whatever the format", "[audit_command]") {
  const std::string pod =
      "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: t, resources: "
      "{limits: {nvidia.com/gpu: 1, memory: 8Gi}}}]}}";
  struct Case {
    const char* name;
    std::string text;
    int records, errors;
  };
  const Case cases[] = {
      {"a document on its separator line", "--- " + pod + "\n", 1, 0},
      {"two, the second on its separator line", "kind: ConfigMap\napiVersion: v1\n--- " + pod + "\n", 2, 0},
      {"CR line endings after a comment",
       "# pods\r---\rapiVersion: v1\rkind: Pod\rmetadata: {name: p}\rspec:\r"
       "  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1}}}]\r",
       1, 0},
      {"CR line endings, two documents", "---\r" + pod + "\r---\r" + pod + "\r", 2, 0},
      {"a List's trailing comma",
       R"({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap"},]})", 1, 1},
      {"a List's null item",
       R"({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap"}, null]})", 2, 1},
  };
  for (const auto& c : cases) {
    for (const char* format : {"json", "table"}) {
      CAPTURE(c.name, format);
      Run r = Audit({"-"}, format, "deny", c.text);
      if (std::string(format) == "json") {
        json j = json::parse(r.out);
        CHECK(j["summary"]["error"] == c.errors);
        CHECK(j["records"].size() == static_cast<size_t>(c.records));
      } else {
        CHECK(r.code == (c.errors ? ExitCode::kUsage : ExitCode::kOk));
        if (!c.errors) CHECK_THAT(r.out, !Catch::Contains("0 objects"));
      }
    }
    // -o patched prints every document it read, patched or as it was.
    if (!c.errors) {
      Run patched = Audit({"-"}, "patched", "deny", c.text);
      CHECK(patched.code == ExitCode::kOk);
      CHECK_THAT(patched.out, Catch::Contains("kind: Pod"));
      CHECK_THAT(patched.out, Catch::Contains("dshm"));
    }
  }
}

// A directory that cannot be read, a dangling link or a FIFO named like a manifest is an error
// of the audit (exit 2) naming it; the readable files beside it are audited.
TEST_CASE("RunAudit names what a directory holds that it cannot read", "[audit_command]") {
  test::TempDir dir;
  std::ofstream(dir.File("pod.yaml")) << test::ReadTestdata("../../examples/pod-needs-patch.yaml");
  std::filesystem::create_symlink(dir.File("gone.yaml"), dir.File("dangling.yaml"));
  REQUIRE(::mkfifo(dir.File("pipe.yml").c_str(), 0600) == 0);
  Run r = Audit({dir.path()}, "json", "deny");
  CHECK(r.code == ExitCode::kUsage);
  json j = json::parse(r.out);
  CHECK(j["summary"]["patch"] == 1);
  CHECK(j["summary"]["error"] == 2);
  CHECK_THAT(r.err, Catch::Contains(dir.File("dangling.yaml") + ": a symbolic link to nothing"));
  CHECK_THAT(r.err, Catch::Contains(dir.File("pipe.yml") + ": not a regular file or a directory (a FIFO)"));
}

// A path need not be UTF-8; every output that must be (YAML, JSON, XML) still is, and says it.
TEST_CASE("RunAudit writes every format for a file whose name is not UTF-8", "[audit_command]") {
  test::TempDir dir;
  const std::string name = dir.File("a\xff.yaml");
  std::ofstream(name) << test::ReadTestdata("../../examples/pod-needs-patch.yaml");
  for (const char* format : {"yaml", "json", "junit", "sarif", "table", "github", "policyreport"}) {
    CAPTURE(format);
    Run r = Audit({dir.path()}, format, "deny");
    CHECK(r.code == ExitCode::kOk);
    CHECK_FALSE(r.out.empty());
    CHECK(io::ValidUtf8(r.out) == r.out);
  }
  json yaml = test::Yaml(Audit({dir.path()}, "yaml", "deny").out);
  CHECK(yaml["records"][0]["file"] == dir.File("a\xEF\xBF\xBD.yaml"));
  CHECK(yaml["records"][0]["verdict"] == "patch");
}

// Inputs that crashed fuzz/audit_fuzz: every output format must still be produced, and JSON
// output must be valid JSON even when the input (or a parser's message about it) is not UTF-8.
TEST_CASE("RunAudit survives the inputs the audit fuzzer found", "[audit_command]") {
  for (const char* file :
       {"fuzz-regressions/audit-invalid-utf8.yaml", "fuzz-regressions/audit-invalid-utf8-in-error.yaml",
        "fuzz-regressions/audit-recursive-alias.yaml"}) {
    for (const char* format : {"json", "yaml", "table", "patched"}) {
      CAPTURE(file, format);
      Run r = Audit({test::TestdataPath(file)}, format);
      CHECK(r.code == ExitCode::kUsage);  // unreadable documents are reported, not fatal
      CHECK_THAT(r.err, Catch::Contains("invalid UTF-8") || Catch::Contains("inside its own anchor"));
      if (std::string(format) == "json") CHECK_NOTHROW(json::parse(r.out));
    }
  }
}

}  // namespace
}  // namespace shmguard::cli

namespace shmguard::cli {
namespace {

using nlohmann::json;

TEST_CASE("RunAudit reports a List item nested too deep and audits the other items", "[audit_command]") {
  std::string deep = std::string(200, '[') + std::string(200, ']');
  std::string list =
      R"({"kind": "List", "apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}, )" +
      deep + R"(, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": []}}]})";
  for (int jobs : {1, 2}) {
    CAPTURE(jobs);
    std::istringstream in(list);
    std::ostringstream out, err;
    AuditOptions o{{"-"}, AuditFormat::kJson, Severity::kError, jobs};
    CHECK(RunAudit(o, Policy{}, in, out, err) == ExitCode::kUsage);
    CHECK_THAT(err.str(), Catch::Contains("nested deeper than 128"));
    json j = json::parse(out.str());
    REQUIRE(j["records"].size() == 3);
    CHECK(j["records"][0]["name"] == "a");
    CHECK(j["records"][1]["verdict"] == "error");
    CHECK(j["records"][2]["name"] == "b");
  }
}

}  // namespace
}  // namespace shmguard::cli

namespace shmguard::cli {
namespace {

using nlohmann::json;

// Unannotated GPU pods get a size. Over the corpus as written (no annotations added): every
// patch applies and re-audits with no patch.
TEST_CASE("The audit of the corpus as written: patches apply and are idempotent", "[audit_command][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  std::istringstream no_stdin;
  AuditResult result = CollectAudit({test::CorpusPath()}, Policy{}, no_stdin);
  std::map<std::string, const io::Document*> by_place;
  for (const auto& doc : result.documents) by_place[doc.file + ":" + std::to_string(doc.index)] = &doc;
  int patched = 0, sized_templates = 0;
  for (const auto& r : result.records) {
    for (const auto& p : r.pods) sized_templates += p.estimated && p.verdict == Verdict::kPatch;
    if (r.verdict != AuditVerdict::kPatch) continue;
    CAPTURE(r.file, r.document, r.kind, r.name);
    const io::Document* doc = by_place.at(r.file + ":" + std::to_string(r.document));
    REQUIRE(doc->object.has_value());
    json object = r.item ? doc->object->ToJson()["items"][*r.item] : doc->object->ToJson();
    json out;
    REQUIRE_NOTHROW(out = object.patch(r.patch.ToJson()));
    Evaluation again = Evaluate(out, Policy{});
    CHECK(again.patch.empty());
    CHECK(again.verdict == Verdict::kOk);
    ++patched;
  }
  CHECK(patched >= 4);
  CHECK(sized_templates >= 4);
}

// A pod that gets its GPUs through DRA is sized from the ResourceClaimTemplate in the same
// input, after it or before it, as a TrainJob from its runtime.
TEST_CASE("CollectAudit counts the GPUs of a ResourceClaimTemplate anywhere in the input", "[audit_command]") {
  const std::string pod = R"(apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  resourceClaims: [{name: gpus, resourceClaimTemplateName: four}]
  containers:
  - {name: t, resources: {claims: [{name: gpus}], limits: {memory: 64Gi}}}
)";
  const std::string tpl = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: four, namespace: ml}
spec: {spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, count: 4}}]}}}
)";
  for (const std::string& text : {pod + "---\n" + tpl, tpl + "---\n" + pod, pod}) {
    std::istringstream in(text);
    AuditResult r = CollectAudit({"-"}, Policy{}, in);
    const bool has_template = text.find("ResourceClaimTemplate") != std::string::npos;
    bool found = false;
    for (const auto& record : r.records) {
      if (record.kind != "Pod") continue;
      found = true;
      CHECK(record.verdict == (has_template ? AuditVerdict::kPatch : AuditVerdict::kOk));
    }
    CHECK(found);
  }
}

}  // namespace
}  // namespace shmguard::cli
