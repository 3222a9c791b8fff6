// The audit's typed records: RecordsOf over a Pod, a JobSet, a Compose file and a non-workload;
// the verdicts' names; the summary's counts.
#include "cli/outputs/audit_record.h"

#include <catch2/catch.hpp>
#include <set>

#include "test_util.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

constexpr int64_t kGi = int64_t{1} << 30;

std::vector<std::string> Ids(const AuditRecord& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) out.emplace_back(f.finding.id());
  return out;
}

std::vector<AuditRecord> RecordsOfYaml(const std::string& yaml, const Exemptions& exemptions = {}) {
  static json kept;  // records hold no view into it, but keep it like the audit does
  kept = test::Yaml(yaml);
  return RecordsOf(kept, Policy{}, {.exemptions = exemptions});
}

TEST_CASE("RecordsOf gives a Pod one record with its verdict, sizes and patch", "[audit_record]") {
  auto records = RecordsOfYaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team, annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 64Mi}}
spec:
  containers:
  - name: t
    resources: {limits: {nvidia.com/gpu: 1, memory: 64Gi}}
)");
  REQUIRE(records.size() == 1);
  const AuditRecord& r = records[0];
  CHECK(r.api_version == "v1");
  CHECK(r.kind == "Pod");
  CHECK(r.namespace_name == "team");
  CHECK(r.name == "p");
  CHECK(r.service.empty());
  CHECK(r.workload);
  CHECK(r.verdict == AuditVerdict::kPatch);
  CHECK_FALSE(r.patch.empty());
  CHECK_FALSE(r.changes.empty());
  REQUIRE(r.pods.size() == 1);
  CHECK(r.pods[0].path == "/spec");
  CHECK(r.pods[0].verdict == Verdict::kPatch);
  CHECK(r.pods[0].required_bytes > 0);
  CHECK_FALSE(r.pods[0].estimated);  // sized from its DataLoader annotations
  CHECK(r.required_bytes == r.pods[0].required_bytes);
  CHECK(r.current_shm == "64Mi (container default)");
  CHECK(r.memory_limit_bytes == 64 * kGi);
  // Its findings, in the order the evaluation gave them, each with its pod; none located yet.
  CHECK(Ids(r) == std::vector<std::string>{"shm-plan", "memory-headroom", "shm-below-need"});
  for (const auto& f : r.findings) {
    CHECK(f.finding.pod == "pod");
    CHECK(f.line == 0);
  }
  CHECK_FALSE(PrefixPods(r));  // one pod: no label in the words
  CHECK(WorstSeverity(r) == Severity::kWarning);
}

TEST_CASE("RecordsOf prefixes each pod's words with its label when an object has several", "[audit_record]") {
  auto records = RecordsOfYaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: driver
    template: {spec: {template: {spec: {containers: [{name: d, resources: {limits: {memory: 4Gi}}}]}}}}
  - name: workers
    template:
      spec:
        template:
          metadata: {annotations: {shmguard.io/num-workers: "4", shmguard.io/batch-bytes: 16Mi}}
          spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}}]}
)");
  REQUIRE(records.size() == 1);
  const AuditRecord& r = records[0];
  REQUIRE(r.pods.size() == 2);
  CHECK(r.verdict == AuditVerdict::kPatch);
  CHECK(r.required_bytes == std::max(r.pods[0].required_bytes, r.pods[1].required_bytes));
  CHECK(r.pods[1].required_bytes > 0);
  CHECK(PrefixPods(r));
  for (const auto& f : r.findings) CHECK((f.finding.pod == r.pods[0].label || f.finding.pod == r.pods[1].label));
  REQUIRE_FALSE(r.changes.empty());
  for (const auto& change : r.changes) CHECK(change.rfind(r.pods[1].label + ": ", 0) == 0);  // only workers change
}

TEST_CASE("RecordsOf gives each Compose service a record of its own", "[audit_record]") {
  auto records = RecordsOfYaml(R"(
name: app
services:
  train:
    image: trainer
    mem_limit: 64g
    labels: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 64Mi}
    deploy: {resources: {reservations: {devices: [{capabilities: [gpu], count: 1}]}}}
  web:
    image: nginx
)");
  REQUIRE(records.size() == 2);
  CHECK(records[0].kind == "Compose");
  CHECK(records[0].name == "app");
  CHECK(records[0].service == "train");
  CHECK(records[0].verdict == AuditVerdict::kPatch);
  CHECK_FALSE(records[0].patch.empty());
  CHECK(records[0].memory_limit_bytes == 64 * kGi);
  CHECK(records[1].service == "web");
  CHECK(records[1].verdict != AuditVerdict::kPatch);
  CHECK(records[1].patch.empty());  // the train service's patch is not web's
  for (const AuditRecord& r : records) CHECK(r.pods.size() == 1);
}

TEST_CASE("RecordsOf reports a non-workload as a skip that says why", "[audit_record]") {
  auto records = RecordsOfYaml("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n");
  REQUIRE(records.size() == 1);
  CHECK(records[0].verdict == AuditVerdict::kSkip);
  CHECK_FALSE(records[0].workload);
  CHECK(records[0].api_version == "v1");
  CHECK(Ids(records[0]) == std::vector<std::string>{"not-a-workload"});
  CHECK(WorstSeverity(records[0]) == Severity::kInfo);
  CHECK(records[0].pods.empty());
}

TEST_CASE("RecordsOf keeps exempted findings, suppressed, and leaves their part out of the patch", "[audit_record]") {
  const char* pod = R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 1Gi}}
spec:
  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}}]
)";
  auto denied = RecordsOfYaml(pod);
  REQUIRE(denied.size() == 1);
  CHECK(denied[0].verdict == AuditVerdict::kDeny);
  CHECK(WorstSeverity(denied[0]) == Severity::kError);
  // Exempted, the error no longer denies, and nothing over the memory limit is patched in.
  auto exempt = RecordsOfYaml(pod, Exemptions{{Check::kShmOverMemoryLimit}});
  REQUIRE(exempt.size() == 1);
  CHECK(exempt[0].verdict == AuditVerdict::kOk);
  CHECK(exempt[0].patch.empty());
  CHECK(Ids(exempt[0]) == Ids(denied[0]));
  for (const auto& f : exempt[0].findings) {
    CHECK(f.finding.suppressed == (f.finding.check == Check::kShmOverMemoryLimit));
  }
  CHECK(WorstSeverity(exempt[0]) == Severity::kInfo);
  AuditSummary s;
  s.Add(exempt[0]);
  CHECK(s.suppressed == 1);
  CHECK(s.checks.at("shm-over-memory-limit") == 1);
}

TEST_CASE("ObjectName: a Compose service, a namespaced object, a cluster-scoped one, none", "[audit_record]") {
  AuditRecord service;
  service.service = "trainer";
  service.kind = "Pod";  // a service is named as one, whatever else is set
  CHECK(ObjectName(service) == "service trainer");
  AuditRecord pod;
  pod.kind = "Pod";
  pod.namespace_name = "ml";
  pod.name = "p";
  CHECK(ObjectName(pod) == "Pod ml/p");
  AuditRecord runtime;
  runtime.kind = "ClusterTrainingRuntime";
  runtime.name = "torch";
  CHECK(ObjectName(runtime) == "ClusterTrainingRuntime torch");
  CHECK(ObjectName(AuditRecord{}).empty());
}

TEST_CASE("AuditVerdictName and AuditVerdictOf name every verdict once", "[audit_record]") {
  std::set<std::string> names;
  for (AuditVerdict v : kAuditVerdicts) names.insert(AuditVerdictName(v));
  CHECK(names == std::set<std::string>{"ok", "patch", "deny", "skip", "error"});
  CHECK(AuditVerdictOf(Verdict::kOk) == AuditVerdict::kOk);
  CHECK(AuditVerdictOf(Verdict::kPatch) == AuditVerdict::kPatch);
  CHECK(AuditVerdictOf(Verdict::kDeny) == AuditVerdict::kDeny);
  CHECK(AuditVerdictOf(Verdict::kSkip) == AuditVerdict::kSkip);
}

TEST_CASE("AuditSummary counts objects, verdicts and skipped kinds", "[audit_record]") {
  auto record = [](AuditVerdict v, bool workload, std::string kind) {
    AuditRecord r;
    r.verdict = v;
    r.workload = workload;
    r.kind = std::move(kind);
    return r;
  };
  AuditSummary s;
  s.Add(record(AuditVerdict::kPatch, true, "Pod"));
  s.Add(record(AuditVerdict::kSkip, false, "Service"));
  s.Add(record(AuditVerdict::kSkip, false, ""));
  s.Add(record(AuditVerdict::kSkip, true, "TrainJob"));  // a workload with nothing to size
  s.Add(record(AuditVerdict::kError, true, ""));         // a document that did not parse: no object
  CHECK(s.objects == 4);
  CHECK(s.non_workloads == 2);
  CHECK(s.skipped_kinds == std::map<std::string, int>{{"(no kind)", 1}, {"Service", 1}});
  CHECK(s.Count(AuditVerdict::kPatch) == 1);
  CHECK(s.Count(AuditVerdict::kSkip) == 3);
  CHECK(s.Count(AuditVerdict::kError) == 1);
  CHECK(s.Count(AuditVerdict::kDeny) == 0);
  CHECK(s.checks.empty());  // findings by check: none in these records
}

}  // namespace
}  // namespace shmguard::cli
