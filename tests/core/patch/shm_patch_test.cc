// BuildPodPatch through Evaluate (the volume and its mounts; IPC_LOCK and hostIPC are in
// shm_patch_privileges_test.cc): every patch is applied with nlohmann's RFC 6902 json::patch,
// the result is checked field by field, and evaluating the patched object gives no patch.
#include "core/patch/shm_patch.h"

#include <catch2/catch.hpp>

#include "core/patch/patch_check.h"
#include "core/values/json_patch.h"
#include "core/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
using patch_test::FindingOf;
using patch_test::kBarePod;
using patch_test::PatchAndRecheck;
using patch_test::Unpatched;
using test::Yaml;

TEST_CASE("BuildPodPatch creates the volume and mounts from nothing, and no privilege", "[shm_patch]") {
  json pod = Yaml(kBarePod);
  json out = PatchAndRecheck(pod);
  const json& spec = out["spec"];
  REQUIRE(spec["volumes"].size() == 1);
  CHECK(spec["volumes"][0] == json::parse(R"({"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"14078Mi"}})"));
  for (const auto& c : spec["containers"]) {
    CHECK(c["volumeMounts"] == json::parse(R"([{"name":"dshm","mountPath":"/dev/shm"}])"));
    CHECK_FALSE(c.contains("securityContext"));  // no RDMA: IPC_LOCK would serve nothing
  }
  CHECK_FALSE(spec.contains("hostIPC"));  // 4 GPUs, and still nothing in the pod needs the node's IPC
  const std::string text = out["metadata"]["annotations"]["shmguard.io/plan"].get<std::string>();
  json plan = json::parse(text);
  CHECK(plan.dump() == text);  // compact, keys sorted
  CHECK(plan["batchBytes"] == "160Mi");
  CHECK(plan["prefetchFactor"] == 2);
  CHECK(plan["gpus"] == 4);
  CHECK(plan["nodes"] == 1);
  CHECK(plan["required"] == "14078Mi");
  CHECK(plan["procs"] == 4);
  CHECK(plan["workers"] == 8);
}

TEST_CASE("BuildPodPatch escapes annotation keys as RFC 6901 tokens", "[shm_patch]") {
  Evaluation ev = Evaluate(Yaml(kBarePod), Policy{}, {.namespace_name = "team-a"});
  bool found = false;
  for (const auto& op : ev.patch.ToJson()) {
    if (op["path"] == "/metadata/annotations/shmguard.io~1plan") found = true;
  }
  CHECK(found);
  CHECK(EscapePointerToken("a~b/c") == "a~0b~1c");
}

TEST_CASE("BuildPodPatch appends to existing lists", "[shm_patch]") {
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "2", shmguard.io/batch-bytes: 8Mi}}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: trainer
    volumeMounts: [{name: data, mountPath: /data}]
    resources: {limits: {nvidia.com/gpu: "1", memory: 8Gi}}
    securityContext: {runAsUser: 1000, capabilities: {drop: [ALL]}}
)");
  Policy always;  // the capability as every GPU container got it before `auto`
  always.ipc_lock = IpcLockMode::kAlways;
  json out = PatchAndRecheck(pod, always);
  CHECK(out["spec"]["volumes"].size() == 2);
  CHECK(out["spec"]["volumes"][0]["name"] == "data");
  CHECK(out["spec"]["containers"][0]["volumeMounts"].size() == 2);
  const json& sc = out["spec"]["containers"][0]["securityContext"];
  CHECK(sc["capabilities"]["drop"] == json::array({"ALL"}));
  CHECK(sc["capabilities"]["add"] == json::array({"IPC_LOCK"}));
  CHECK(sc["runAsUser"] == 1000);
  CHECK_FALSE(out["spec"].contains("hostIPC"));
  // Under auto the same pod keeps its securityContext as it is: no RDMA, and a non-root user.
  CHECK(PatchAndRecheck(pod)["spec"]["containers"][0]["securityContext"] ==
        pod["spec"]["containers"][0]["securityContext"]);
}

TEST_CASE("BuildPodPatch raises a small memory emptyDir instead of adding another", "[shm_patch]") {
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 64Mi}}
spec:
  volumes: [{name: shm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
  containers:
  - name: a
    volumeMounts: [{name: shm, mountPath: /dev/shm/}]
    resources: {limits: {memory: 32Gi}}
  - name: b
    resources: {limits: {memory: 1Gi}}
)");
  json out = PatchAndRecheck(pod);
  REQUIRE(out["spec"]["volumes"].size() == 1);
  CHECK(out["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "1460Mi");  // (18×64+64)×1.2
  CHECK(out["spec"]["containers"][0]["volumeMounts"].size() == 1);        // already mounted
  CHECK(out["spec"]["containers"][1]["volumeMounts"][0]["name"] == "shm");
}

// What the pod has at /dev/shm wins when it covers the plan: no patch at all, not even the plan
// annotation alone (shm-sufficient says so).

TEST_CASE("BuildPodPatch leaves a large enough emptyDir alone", "[shm_patch]") {
  Evaluation ev = Unpatched(Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]
  containers:
  - name: a
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
)"));
  const Finding* f = FindingOf(ev, Check::kShmSufficient);
  REQUIRE(f);
  CHECK(f->Number("required_bytes") == 82 * (int64_t{1} << 20));
  CHECK(f->Number("unbounded") == 0);
}

// A memory emptyDir without sizeLimit is as large as the pod's memory limit (node memory without
// one, KEP-1967): a sizeLimit of the plan would make it smaller. Each case would have been capped
// at its plan.
TEST_CASE("BuildPodPatch never caps a memory emptyDir without sizeLimit", "[shm_patch]") {
  struct Case {
    const char* name;
    const char* pod;
    int64_t required_mib;
    std::optional<int64_t> limit_gib;
  };
  const Case cases[] = {
      {"annotated, no memory limit", R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
  containers: [{name: a, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
)",
       82, std::nullopt},
      {"annotated 8-GPU pod, 100Gi limit, sizeLimit \"0\" (the kubelet ignores it)", R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 100Mi}}
spec:
  volumes: [{name: shm, emptyDir: {medium: Memory, sizeLimit: "0"}}]
  containers:
  - name: a
    resources: {limits: {nvidia.com/gpu: 8, memory: 100Gi}}
    volumeMounts: [{name: shm, mountPath: /dev/shm}]
)",
       17710, 100},
      {"vllm serve -tp 2, 64Gi limit", R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
  containers:
  - name: vllm
    command: [vllm, serve, m, --tensor-parallel-size, "2"]
    resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
)",
       1024, 64},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      Evaluation ev = Unpatched(Yaml(c.pod));
      const Finding* f = FindingOf(ev, Check::kShmSufficient);
      REQUIRE(f);
      CHECK(f->Number("unbounded") == 1);
      CHECK(f->Number("required_bytes") >= c.required_mib * (int64_t{1} << 20));
      CHECK(f->HasNumber("memory_limit_bytes") == c.limit_gib.has_value());
      if (c.limit_gib) CHECK(f->Number("memory_limit_bytes") == *c.limit_gib << 30);
    }
  }
  SECTION("a container without the mount gets it; the volume stays as written") {
    json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
  containers:
  - {name: a, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}
  - {name: b}
)");
    json out = PatchAndRecheck(pod);
    CHECK_FALSE(out["spec"]["volumes"][0]["emptyDir"].contains("sizeLimit"));
    CHECK(out["spec"]["containers"][1]["volumeMounts"][0]["name"] == "dshm");
  }
  SECTION("under policy mode's rules too") {
    json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
  containers: [{name: a, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
)");
    Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a", .policy_mode = true});
    CHECK(ev.patch.Text().find("sizeLimit") == std::string::npos);
  }
}

TEST_CASE("BuildPodPatch reuses an unmounted memory dshm and avoids other name clashes", "[shm_patch]") {
  SECTION("unmounted memory emptyDir called dshm is reused") {
    json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
  containers: [{name: a}]
)");
    json out = PatchAndRecheck(pod);
    CHECK(out["spec"]["volumes"].size() == 1);
    CHECK(out["spec"]["containers"][0]["volumeMounts"][0]["name"] == "dshm");
  }
  SECTION("a configMap called dshm makes the new volume dshm-1") {
    json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  volumes: [{name: dshm, configMap: {name: c}}, {name: dshm-1, emptyDir: {}}]
  containers: [{name: a, volumeMounts: [{name: dshm, mountPath: /etc/c}]}]
)");
    json out = PatchAndRecheck(pod);
    REQUIRE(out["spec"]["volumes"].size() == 3);
    CHECK(out["spec"]["volumes"][2]["name"] == "dshm-2");
    CHECK(out["spec"]["containers"][0]["volumeMounts"][1]["name"] == "dshm-2");
  }
}

TEST_CASE("BuildPodPatch patches every JobSet pod template and copies the annotations", "[shm_patch]") {
  json jobset = Yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: js
  annotations: {shmguard.io/num-workers: "4", shmguard.io/batch-bytes: 32Mi, other: x}
spec:
  replicatedJobs:
  - name: driver
    template:
      spec:
        template:
          spec:
            containers: [{name: d, resources: {limits: {memory: 4Gi}}}]
  - name: workers
    replicas: 4
    template:
      spec:
        parallelism: 2
        template:
          metadata:
            annotations: {shmguard.io/num-workers: "2"}
          spec:
            containers: [{name: w, resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}}]
)");
  json out = PatchAndRecheck(jobset);
  const json& driver = out["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
  const json& worker = out["spec"]["replicatedJobs"][1]["template"]["spec"]["template"];
  CHECK(driver["metadata"]["annotations"]["shmguard.io/num-workers"] == "4");
  CHECK_FALSE(driver["metadata"]["annotations"].contains("other"));
  CHECK(worker["metadata"]["annotations"]["shmguard.io/num-workers"] == "2");  // template wins
  CHECK(worker["metadata"]["annotations"]["shmguard.io/batch-bytes"] == "32Mi");
  CHECK(worker["metadata"]["annotations"]["shmguard.io/nodes"] == "8");  // 4 replicas × 2
  json plan = json::parse(worker["metadata"]["annotations"]["shmguard.io/plan"].get<std::string>());
  CHECK(plan["nodes"] == 8);
  CHECK(plan["procs"] == 8);
  CHECK_FALSE(worker["spec"].contains("hostIPC"));
  CHECK_FALSE(worker["spec"]["containers"][0].contains("securityContext"));

  // The pods the JobSet creates carry their plan: the Pod webhook has nothing left to do.
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", worker["metadata"]}, {"spec", worker["spec"]}};
  pod["metadata"]["name"] = "js-workers-0-0";
  Evaluation ev = Evaluate(pod, Policy{}, {.namespace_name = "team-a"});
  CHECK(ev.verdict == Verdict::kOk);
  CHECK(ev.patch.empty());
}

}  // namespace
}  // namespace shmguard
