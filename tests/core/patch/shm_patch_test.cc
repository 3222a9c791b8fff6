// BuildPodPatch through Evaluate: every patch is applied with nlohmann's RFC 6902 json::patch,
// the result is checked field by field, and evaluating the patched object gives no patch.
#include "shmguard/patch/shm_patch.h"

#include <catch2/catch.hpp>
#include <set>

#include "shmguard/values/json_patch.h"
#include "shmguard/verdict/evaluation.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;
using test::Yaml;

// Evaluates, applies the patch, checks idempotence; returns the patched object.
json PatchAndRecheck(const json& object, const Policy& policy = Policy{}, const char* ns = "team-a") {
  Evaluation ev = Evaluate(object, policy, {.namespace_name = ns});
  INFO(ev.patch.Text());
  REQUIRE(ev.verdict == Verdict::kPatch);
  json patched = object.patch(ev.patch.ToJson());
  Evaluation again = Evaluate(patched, policy, {.namespace_name = ns});
  INFO(patched.dump(2));
  CHECK(again.patch.empty());
  CHECK(again.verdict == Verdict::kOk);
  return patched;
}

const char* kBarePod = R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 160Mi}
spec:
  containers:
  - name: trainer
    image: x
    resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}
  - name: logger
    image: y
)";

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

TEST_CASE("BuildPodPatch adds IPC_LOCK to a root GPU container that uses RDMA, and hostIPC only when told",
          "[shm_patch]") {
  json pod = Yaml(kBarePod);
  pod["spec"]["containers"][0]["resources"]["limits"]["rdma/hca_shared_devices_a"] = 1;
  SECTION("ipcLock auto: the RDMA container, whose user is the image's") {
    json out = PatchAndRecheck(pod);
    CHECK(out["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
    CHECK_FALSE(out["spec"]["containers"][1].contains("securityContext"));
    CHECK_FALSE(out["spec"].contains("hostIPC"));
  }
  SECTION("hostIPC always") {
    Policy p;
    p.host_ipc = HostIpcMode::kAlways;
    json out = PatchAndRecheck(pod, p);
    CHECK(out["spec"]["hostIPC"] == true);
  }
  SECTION("a namespace rule's hostIPC always, beside the policy's auto") {
    Policy p;
    NamespaceRule legacy{{"legacy-*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kPrivileged};
    legacy.host_ipc = HostIpcMode::kAlways;
    p.namespaces.insert(p.namespaces.begin(), legacy);
    CHECK(PatchAndRecheck(pod, p, "legacy-a")["spec"]["hostIPC"] == true);
    CHECK_FALSE(PatchAndRecheck(pod, p, "team-a")["spec"].contains("hostIPC"));
  }
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
Evaluation Unpatched(const json& pod, const Policy& policy = Policy{}, const char* ns = "team-a") {
  Evaluation ev = Evaluate(pod, policy, {.namespace_name = ns});
  INFO(ev.patch.Text());
  CHECK(ev.verdict == Verdict::kOk);
  CHECK(ev.patch.empty());
  return ev;
}

const Finding* FindingOf(const Evaluation& ev, Check c) {
  for (const auto& pe : ev.pods) {
    for (const auto& f : pe.findings) {
      if (f.check == c) return &f;
    }
  }
  return nullptr;
}

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

TEST_CASE("BuildPodPatch respects capabilities that already grant IPC_LOCK", "[shm_patch]") {
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  containers:
  - {name: a, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [ipc_lock]}}}
  - {name: b, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [CAP_IPC_LOCK]}}}
  - {name: c, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {privileged: true}}
  - {name: d, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [SYS_PTRACE]}}}
  - {name: e, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}, securityContext: {capabilities: {add: [all]}}}
)");
  json out = PatchAndRecheck(pod);
  const json& c = out["spec"]["containers"];
  CHECK(c[0]["securityContext"]["capabilities"]["add"] == json::array({"ipc_lock"}));
  CHECK(c[1]["securityContext"]["capabilities"]["add"] == json::array({"CAP_IPC_LOCK"}));
  CHECK_FALSE(c[2]["securityContext"].contains("capabilities"));
  CHECK(c[3]["securityContext"]["capabilities"]["add"] == json::array({"SYS_PTRACE", "IPC_LOCK"}));
  CHECK(c[4]["securityContext"]["capabilities"]["add"] == json::array({"all"}));
  CHECK_FALSE(out["spec"].contains("hostIPC"));  // 5 GPUs, hostIPC auto
}

TEST_CASE("BuildPodPatch adds IPC_LOCK by the RDMA and user rules of ipcLock auto", "[shm_patch]") {
  // Each container requests a GPU; whether it gets IPC_LOCK follows from its RDMA and its user.
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  securityContext: {runAsUser: 0}
  containers:
  - {name: efa-root, resources: {limits: {nvidia.com/gpu: 1, vpc.amazonaws.com/efa: 1}}}
  - {name: ib-env, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_NET, value: ib}]}
  - {name: hca-env, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_IB_HCA, value: "mlx5_0,mlx5_1"}]}
  - name: ib-disabled
    resources: {limits: {nvidia.com/gpu: 1}}
    env: [{name: NCCL_IB_HCA, value: mlx5_0}, {name: NCCL_IB_DISABLE, value: "1"}]
  - {name: ofi, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_NET_PLUGIN, value: aws-ofi}]}
  - {name: plugin-none, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: NCCL_NET_PLUGIN, value: none}]}
  - {name: fi-efa, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: FI_PROVIDER, value: efa}]}
  - {name: ucx-ib, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: UCX_NET_DEVICES, value: "mlx5_0:1"}]}
  - {name: ucx-tcp, resources: {limits: {nvidia.com/gpu: 1}}, env: [{name: UCX_NET_DEVICES, value: eth0}]}
  - name: rdma-non-root
    resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}
    securityContext: {runAsUser: 1000}
  - name: rdma-non-root-flag
    resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 1}}
    securityContext: {runAsUser: null, runAsNonRoot: true}
  - {name: rdma-no-gpu, resources: {limits: {rdma/ib: 1}}}
  - {name: plain, resources: {limits: {nvidia.com/gpu: 1}}}
)");
  const std::set<std::string> want = {"efa-root", "ib-env", "hca-env", "ofi", "fi-efa", "ucx-ib"};
  json out = PatchAndRecheck(pod);
  for (const json& c : out["spec"]["containers"]) {
    const std::string name = c["name"];
    CAPTURE(name);
    const bool locked = c.contains("securityContext") && c["securityContext"].contains("capabilities");
    CHECK(locked == want.count(name) > 0);
  }
}

TEST_CASE("BuildPodPatch follows the policy's hostIPC, ipcLock and init container choices", "[shm_patch]") {
  json pod = Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "1", shmguard.io/batch-bytes: 1Mi}}
spec:
  hostIPC: false
  initContainers:
  - {name: warmup, resources: {limits: {nvidia.com/gpu: 1}}}
  - {name: fetch}
  containers:
  - {name: a, resources: {limits: {nvidia.com/gpu: 2}}}
  - {name: b}
)");
  SECTION("defaults: GPU init containers only, no IPC_LOCK without RDMA, hostIPC left false") {
    json out = PatchAndRecheck(pod);
    CHECK(out["spec"]["hostIPC"] == false);
    CHECK(out["spec"]["initContainers"][0]["volumeMounts"][0]["mountPath"] == "/dev/shm");
    CHECK_FALSE(out["spec"]["initContainers"][1].contains("volumeMounts"));
    CHECK_FALSE(out["spec"]["initContainers"][0].contains("securityContext"));
    CHECK_FALSE(out["spec"]["containers"][0].contains("securityContext"));
    CHECK_FALSE(out["spec"]["containers"][1].contains("securityContext"));
  }
  SECTION("always: hostIPC replaced, IPC_LOCK on the GPU containers") {
    Policy p;
    p.host_ipc = HostIpcMode::kAlways;
    p.ipc_lock = IpcLockMode::kAlways;
    json out = PatchAndRecheck(pod, p);
    CHECK(out["spec"]["hostIPC"] == true);
    CHECK(out["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
    CHECK_FALSE(out["spec"]["containers"][1].contains("securityContext"));
    CHECK_FALSE(out["spec"]["initContainers"][0].contains("securityContext"));
  }
  SECTION("never / all") {
    Policy p;
    p.host_ipc = HostIpcMode::kNever;
    p.ipc_lock = IpcLockMode::kAll;
    p.init_container_mounts = ContainerSelection::kAll;
    json out = PatchAndRecheck(pod, p);
    CHECK(out["spec"]["hostIPC"] == false);
    CHECK(out["spec"]["initContainers"][1]["volumeMounts"][0]["mountPath"] == "/dev/shm");
    CHECK(out["spec"]["containers"][1]["securityContext"]["capabilities"]["add"] == json::array({"IPC_LOCK"}));
  }
}

TEST_CASE("BuildPodPatch adds neither hostIPC nor IPC_LOCK under baseline Pod Security", "[shm_patch]") {
  Policy p;
  p.namespaces = {NamespaceRule{{"*"}, NamespaceMode::kWarn, false, PodSecurityLevel::kBaseline}};
  p.host_ipc = HostIpcMode::kAlways;
  json pod = Yaml(kBarePod);
  pod["spec"]["containers"][0]["env"] = json::array({{{"name", "NCCL_NET"}, {"value", "IB"}}});
  Evaluation ev = Evaluate(pod, p, {.namespace_name = "team-a"});
  json out = PatchAndRecheck(pod, p);
  CHECK_FALSE(out["spec"].contains("hostIPC"));
  CHECK_FALSE(out["spec"]["containers"][0].contains("securityContext"));
  CHECK(out["spec"]["volumes"][0]["name"] == "dshm");
  std::set<std::string> kept_out;
  for (const Finding& f : ev.AllFindings()) {
    if (f.check == Check::kPodSecurityLimitsPatch) kept_out.insert(f.Value("field") + " " + f.Value("level"));
  }
  CHECK(kept_out == std::set<std::string>{"hostIPC baseline", "IPC_LOCK baseline"});
  const std::vector<Finding> all = ev.AllFindings();
  const Finding* unlimited = test::FindingOf(all, Check::kMemoryLimitMissing);
  REQUIRE(unlimited != nullptr);
  CHECK(unlimited->Value("limit_source") == "container \"logger\" has no memory limit");
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
