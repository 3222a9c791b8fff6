// shmguard report: the records grouped as namespaces, workloads and pod templates (ReportJson),
// and the page (ReportHtml): every text escaped, nothing fetched.
#include <catch2/catch.hpp>
#include <sstream>

#include "cli/commands/report_command.h"
#include "cli/report/report_model.h"
#include "test_util.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::cli {
namespace {

using nlohmann::json;

constexpr int64_t kMi = int64_t{1} << 20, kGi = int64_t{1} << 30;

// The report of `text` (YAML or JSON), through RunReport as the command runs it: its JSON, and
// the page and stderr in `html` and `err` when given. `want`: the exit code it must give.
json ReportOf(const std::string& text, std::string* html = nullptr, ExitCode want = ExitCode::kOk,
              std::string* err_text = nullptr) {
  test::TempDir dir;
  const std::string json_file = dir.File("report.json");
  ReportCommand c;
  c.audit.paths = {"-"};
  c.audit.jobs = 1;
  c.json_file = json_file;
  std::istringstream in(text);
  std::ostringstream out, err;
  const ExitCode code = RunReport(c, in, out, err);
  INFO(err.str());
  CHECK(code == want);
  if (html) *html = out.str();
  if (err_text) *err_text = err.str();
  return json::parse(test::ReadText(json_file));
}

// Two pods of one Deployment (a ReplicaSet named after it), one of another namespace, and the
// Deployment's ShmProfile, as `kubectl get pods,shmprofiles -A -o json` lists them.
constexpr char kCluster[] = R"(
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: serve-5d7c9-a
    namespace: serving
    labels: {pod-template-hash: 5d7c9}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: serve-5d7c9, controller: true, uid: u1}]
  spec:
    containers:
    - name: vllm
      command: [vllm, serve, m, --data-parallel-size, "8"]
      resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
    volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: serve-5d7c9-b
    namespace: serving
    labels: {pod-template-hash: 5d7c9}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: serve-5d7c9, controller: true, uid: u1}]
  spec:
    containers:
    - name: vllm
      command: [vllm, serve, m, --data-parallel-size, "8"]
      resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
    volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: train
    namespace: research
    annotations: {shmguard.io/num-workers: "4", shmguard.io/batch-bytes: 32Mi}
  spec:
    containers:
    - name: trainer
      resources: {limits: {nvidia.com/gpu: 1, memory: 64Gi}}
- apiVersion: shmguard.io/v1alpha1
  kind: ShmProfile
  metadata: {name: deployment.serve, namespace: serving}
  spec: {workload: Deployment/serve}
  status: {peakBytes: 3355443200, sizeBytes: 1073741824, runs: 2, lastObserved: "2026-11-27T08:00:00Z", lastPod: serve-5d7c9-a}
- apiVersion: v1
  kind: Service
  metadata: {name: serve, namespace: serving}
)";

TEST_CASE("ReportJson groups pods by namespace and workload, with their sizes and the learned peak", "[report]") {
  const json r = ReportOf(kCluster);
  REQUIRE(r["namespaces"].size() == 2);
  CHECK(r["namespaces"][0]["name"] == "research");
  CHECK(r["namespaces"][1]["name"] == "serving");

  const json& train = r["namespaces"][0]["workloads"][0];
  CHECK(train["workload"] == "Pod/train");
  CHECK(train["verdict"] == "patch");
  CHECK(train["command"] == "");  // a Pod is recreated, never patched in place
  REQUIRE(train["patch"].is_array());
  const json& row = train["pods"][0];
  CHECK(row["containers"] == json::array({"trainer"}));
  CHECK(row["current"] == "64Mi (container default)");
  CHECK(row["currentBytes"] == 64 * kMi);
  CHECK(row["memoryLimitBytes"] == 64 * kGi);
  CHECK(row["learned"].is_null());
  // One process: (4 workers × prefetch 2 + 2 in flight) batches of 32Mi, then the base and the
  // safety factor (docs/sources.md §1).
  CHECK(row["plan"]["workers"] == 4);
  CHECK(row["plan"]["dataloader_bytes"] == (4 * 2 + 2) * 32 * kMi);
  CHECK(row["requiredBytes"].get<int64_t>() > (4 * 2 + 2) * 32 * kMi);

  const json& serve = r["namespaces"][1]["workloads"][0];
  CHECK(serve["workload"] == "Deployment/serve");
  CHECK(serve["objects"] == 2);
  REQUIRE(serve["pods"].size() == 1);  // the two pods read alike: one row
  const json& pods = serve["pods"][0];
  CHECK(pods["objects"] == 2);
  CHECK(pods["currentBytes"] == kGi);
  CHECK(pods["learned"]["peakBytes"] == 3355443200);
  CHECK(pods["learned"]["runs"] == 2);
  CHECK(pods["requiredBytes"].get<int64_t>() >= 3355443200);

  CHECK(r["summary"]["workloads"] == 2);
  CHECK(r["summary"]["podTemplates"] == 2);
  CHECK(r["summary"]["verdicts"]["skip"] == 2);  // the ShmProfile and the Service
}

TEST_CASE("ReportJson gives a workload's patch as the kubectl command that applies it", "[report]") {
  const json r = ReportOf(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: it's, namespace: ml}
spec:
  template:
    metadata: {annotations: {shmguard.io/num-workers: "2", shmguard.io/batch-bytes: 8Mi}}
    spec:
      containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}}]
)");
  const json& w = r["namespaces"][0]["workloads"][0];
  const std::string command = w["command"];
  CHECK(command.rfind("kubectl -n ml patch job it's --type=json -p '[", 0) == 0);
  // The patch's own quotes would end the shell's: none is left unescaped.
  CHECK(command.find("'\\''") == std::string::npos);  // the patch has none here
  CHECK(w["patch"].size() > 0);
}

TEST_CASE("ReportJson leaves out what is not a workload and counts unreadable input", "[report]") {
  std::string html, err;
  const json r = ReportOf("kind: ConfigMap\nmetadata: {name: c}\n---\n[unclosed\n", &html, ExitCode::kUsage, &err);
  CHECK(err.find("shmguard report: ") != std::string::npos);
  CHECK(r["namespaces"].empty());
  CHECK(r["summary"]["errors"] == 1);
  CHECK(html.find("No workloads in the input.") != std::string::npos);
  CHECK(html.find("1 unreadable") != std::string::npos);
}

TEST_CASE("VerdictRank puts a denial first and an unknown name last", "[report]") {
  CHECK(VerdictRank("deny") > VerdictRank("error"));
  CHECK(VerdictRank("error") > VerdictRank("patch"));
  CHECK(VerdictRank("patch") > VerdictRank("ok"));
  CHECK(VerdictRank("ok") > VerdictRank("skip"));
  CHECK(VerdictRank("nonsense") == VerdictRank("skip"));
}

TEST_CASE("ReportHtml escapes every text of the input and fetches nothing", "[report]") {
  std::string html;
  ReportOf(R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
  annotations: {shmguard.io/num-workers: "2", shmguard.io/batch-bytes: 8Mi}
spec:
  containers:
  - name: "<script>alert(1)</script>"
    resources: {limits: {nvidia.com/gpu: 1}}
)",
           &html);
  CHECK(html.find("<script>alert(1)") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("Content-Security-Policy\" content=\"default-src 'none'") != std::string::npos);
  // Nothing is loaded: no source or link attribute, no URL of a network scheme.
  for (const char* fetch : {" src=", " href=", "http://", "https://", "@import", "url("}) {
    INFO(fetch);
    CHECK(html.find(fetch) == std::string::npos);
  }
  // One script, the page's own.
  CHECK(html.find("<script>") == html.rfind("<script>"));
}

TEST_CASE("RunReport refuses a JSON file it cannot write, before reading the input", "[report]") {
  ReportCommand c;
  c.audit.paths = {"-"};
  c.json_file = "/nonexistent-dir/report.json";
  std::istringstream in("kind: Pod\n");
  std::ostringstream out, err;
  CHECK(RunReport(c, in, out, err) == ExitCode::kUsage);
  CHECK(err.str() == "shmguard report: --json /nonexistent-dir/report.json: cannot be written\n");
  CHECK(out.str().empty());
}

}  // namespace
}  // namespace shmguard::cli
