// CollectAudit over every file of the real third-party corpus (test::CorpusPath, never
// committed; skipped with a message without it): never a crash, every record explained, every
// patch applies and is idempotent, with annotations added and as written.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "cli/commands/audit_command.h"
#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

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

// A vLLM pod whose --config file and envFrom variables are in a ConfigMap of the same input is
// sized from them, in either order; without the ConfigMap, its counts are the pod's GPUs.
TEST_CASE("CollectAudit reads a server's --config file and envFrom from ConfigMaps in the input", "[audit_command]") {
  const std::string pod = R"(apiVersion: v1
kind: Pod
metadata: {name: serve, namespace: ml}
spec:
  volumes: [{name: cfg, configMap: {name: vllm-config}}]
  containers:
  - name: vllm
    command: [vllm, serve, m, --config, /etc/vllm/serve.yaml]
    envFrom: [{configMapRef: {name: vllm-config}}]
    volumeMounts: [{name: cfg, mountPath: /etc/vllm}]
    resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}
)";
  const std::string config = R"(apiVersion: v1
kind: ConfigMap
metadata: {name: vllm-config, namespace: ml}
data:
  VLLM_MQ_MAX_CHUNK_BYTES_MB: "64"
  serve.yaml: |
    tensor-parallel-size: 2
    kv_offloading_size: 8
)";
  auto required = [](const std::string& text) {
    std::istringstream in(text);
    AuditResult r = CollectAudit({"-"}, Policy{}, in);
    for (const auto& record : r.records) {
      if (record.kind == "Pod") return record.required_bytes;
    }
    FAIL("no Pod record");
    return int64_t{0};
  };
  const int64_t with = required(pod + "---\n" + config), after = required(config + "---\n" + pod);
  CHECK(with == after);
  // The file's 8 GiB KV offload is counted: the region is in /dev/shm.
  CHECK(with > int64_t{8} << 30);
  // Without the ConfigMap: 8 ranks, no offload, 16 MiB chunks.
  const int64_t without = required(pod);
  CHECK(without < int64_t{8} << 30);
  CHECK(without > 0);
}

}  // namespace
}  // namespace shmguard::cli
