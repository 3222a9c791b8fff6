// RemedyFor: what is done about a pod once its /dev/shm size is known — Pod Security, kinds without
// hostIPC, annotations for controllers' pods, and the verdict of kinds shmguard never patches (docs/sources.md §5, §6).
#include "core/patch/shm_remedy.h"

#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/facts/shm_mount.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kGi = 1ll << 30;

// A size with nothing to record: its shmguard.io/plan annotation is "{}".
const PlanNote kNoNote;

// The built-in policy with hostIPC: always.
Policy HostIpcAlways() {
  Policy p;
  p.host_ipc = HostIpcMode::kAlways;
  return p;
}

// `r` as EvaluatePod settles it: the findings of exempted checks marked, the verdict kDeny while
// an error is not.
Remedy Settled(Remedy r, const PodContext& ctx) {
  bool error = false;
  for (auto& f : r.findings) {
    f.suppressed = ctx.Exempt(f.check);
    error = error || (!f.suppressed && f.severity == Severity::kError);
  }
  if (error) r.verdict = Verdict::kDeny;
  return r;
}

// RemedyFor the only pod template of `object`, giving it `required` bytes.
Remedy Patched(const json& object, int64_t required, PodSecurityLevel level = PodSecurityLevel::kPrivileged,
               std::vector<Check> exempt = {}, const Policy& policy = Policy()) {
  Workload w = test::OnlyTemplate(object);
  const PodTemplate& t = w.templates[0];
  const PodReading r = ReadPod(t, policy);
  REQUIRE_FALSE(r.facts_error);
  REQUIRE_FALSE(r.mount_error);
  NamespaceRule rule;
  rule.pod_security = level;
  const PodContext ctx{Detail::kAll, std::move(exempt)};
  return Settled(RemedyFor({t, w, rule, policy, ctx}, r, {required, &kNoNote, 0, nullptr, r.current}), ctx);
}

const char* kTwoGpuPod = R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}}]
)";

// Two GPUs, NCCL over InfiniBand, the image's user.
const char* kTwoGpuIbPod = R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: t
    resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
    env: [{name: NCCL_NET, value: IB}]
)";

TEST_CASE("RemedyFor adds neither hostIPC nor IPC_LOCK to a GPU pod that needs neither", "[shm_remedy]") {
  Remedy pe = Patched(test::Yaml(kTwoGpuPod), 2 * kGi);
  CHECK(pe.verdict == Verdict::kPatch);
  CHECK(test::Ids(pe.findings) == std::vector<std::string>{"shm-below-need"});
  CHECK_THAT(pe.patch.Text(), !Catch::Contains("hostIPC") && !Catch::Contains("IPC_LOCK"));
}

TEST_CASE("RemedyFor adds hostIPC and IPC_LOCK only under Pod Security privileged, saying why not", "[shm_remedy]") {
  const json pod = test::Yaml(kTwoGpuIbPod);
  Remedy privileged = Patched(pod, 2 * kGi, PodSecurityLevel::kPrivileged, {}, HostIpcAlways());
  CHECK(privileged.verdict == Verdict::kPatch);
  // Each part of the patch with the finding it answers, pointing where the part goes.
  CHECK(test::Ids(privileged.findings) ==
        std::vector<std::string>{"shm-below-need", "ipc-lock-missing", "host-ipc-missing"});
  CHECK(privileged.findings[0].pointer == "/spec/volumes");
  CHECK(privileged.findings[0].Number("required_bytes") == 2 * kGi);
  CHECK(privileged.findings[1].pointer == "/spec/containers/0/securityContext/capabilities/add");
  CHECK(privileged.findings[1].Value("containers") == "t");
  CHECK(privileged.findings[1].Value("reason") == "env NCCL_NET=IB");
  CHECK(privileged.findings[1].Value("user") == "runAsUser unset");
  CHECK(privileged.findings[2].pointer == "/spec/hostIPC");  // not written: located at its parent
  CHECK(privileged.findings[2].severity == Severity::kInfo);
  CHECK(privileged.findings[2].Number("gpus") == 2);
  CHECK_THAT(privileged.patch.Text(), Catch::Contains(R"("path":"/spec/hostIPC")"));
  CHECK_THAT(privileged.patch.Text(), Catch::Contains("IPC_LOCK"));
  for (PodSecurityLevel level : {PodSecurityLevel::kBaseline, PodSecurityLevel::kRestricted}) {
    const std::string name = PodSecurityLevelName(level);
    CAPTURE(name);
    Remedy pe = Patched(pod, 2 * kGi, level, {}, HostIpcAlways());
    CHECK(pe.verdict == Verdict::kPatch);
    REQUIRE(test::Ids(pe.findings) ==
            std::vector<std::string>{"pod-security-limits-patch", "pod-security-limits-patch", "shm-below-need"});
    CHECK(pe.findings[0].Value("field") == "hostIPC");
    CHECK(pe.findings[0].pointer == "/spec/hostIPC");
    CHECK(pe.findings[1].Value("field") == "IPC_LOCK");
    for (int i : {0, 1}) CHECK(pe.findings[i].Value("level") == name);
    CHECK(pe.findings[2].Number("required_bytes") == 2 * kGi);
    CHECK(pe.findings[2].Value("current") == "64Mi (container default)");
    CHECK_THAT(pe.patch.Text(), !Catch::Contains("hostIPC") && !Catch::Contains("IPC_LOCK"));
    CHECK_THAT(pe.patch.Text(), Catch::Contains(R"("sizeLimit":"2Gi")"));  // the volume still comes
  }
  // Under baseline without RDMA or hostIPC: always, there is nothing to keep out, and nothing is said.
  Remedy plain = Patched(test::Yaml(kTwoGpuPod), 2 * kGi, PodSecurityLevel::kBaseline);
  CHECK(test::Ids(plain.findings) == std::vector<std::string>{"shm-below-need"});
}

TEST_CASE("RemedyFor gives a non-root RDMA container no IPC_LOCK and says what works instead", "[shm_remedy]") {
  json pod = test::Yaml(kTwoGpuIbPod);
  pod["spec"]["securityContext"] = {{"runAsUser", 1000}};
  pod["spec"]["containers"][0]["resources"]["limits"]["rdma/hca_shared_devices_a"] = 1;
  Remedy pe = Patched(pod, 2 * kGi);
  CHECK(pe.verdict == Verdict::kPatch);
  CHECK(test::Ids(pe.findings) == std::vector<std::string>{"ipc-lock-non-root", "shm-below-need"});
  const Finding& f = pe.findings[0];
  CHECK(f.severity == Severity::kWarning);
  CHECK(f.pointer == "/spec/containers/0/securityContext");
  CHECK(f.Value("containers") == "t");
  CHECK(f.Value("reason") == "requests rdma/hca_shared_devices_a");  // a resource before the env
  CHECK(f.Value("user") == "runAsUser 1000 (pod)");
  CHECK_THAT(pe.patch.Text(), !Catch::Contains("IPC_LOCK"));
  // The container's own runAsUser: 0 overrides the pod's: it runs as root, and gets the capability.
  pod["spec"]["containers"][0]["securityContext"] = {{"runAsUser", 0}};
  Remedy root = Patched(pod, 2 * kGi);
  CHECK(test::Ids(root.findings) == std::vector<std::string>{"shm-below-need", "ipc-lock-missing"});
  CHECK(root.findings[1].Value("user") == "runAsUser 0");
}

TEST_CASE("RemedyFor adds no dshm to an MPS client, and says what it needs", "[shm_remedy]") {
  json pod = test::Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: infer, resources: {limits: {nvidia.com/gpu.shared: 1, memory: 16Gi}}}
  - {name: sidecar}
)");
  SECTION("the resource in mpsResources") {
    Policy policy;
    policy.mps_resources = {"nvidia.com/gpu.shared"};
    Remedy pe = Patched(pod, 2 * kGi, PodSecurityLevel::kPrivileged, {}, policy);
    CHECK(pe.verdict == Verdict::kOk);
    CHECK(pe.patch.empty());  // not even the plan annotation
    REQUIRE(test::Ids(pe.findings) == std::vector<std::string>{"mps-shm"});
    CHECK(pe.findings[0].pointer == "/spec/containers/0/resources");
    CHECK(pe.findings[0].Value("resource") == "nvidia.com/gpu.shared");
    CHECK(pe.findings[0].Value("containers") == "infer");
    CHECK(pe.findings[0].Number("required_bytes") == 2 * kGi);
  }
  SECTION("a shared GPU is a GPU, time-sliced by default: it gets its dshm") {
    Remedy pe = Patched(pod, 2 * kGi);
    CHECK(pe.verdict == Verdict::kPatch);
    CHECK(test::Ids(pe.findings) == std::vector<std::string>{"shm-below-need"});
    CHECK_THAT(pe.patch.Text(), Catch::Contains(R"("sizeLimit":"2Gi")"));
  }
}

TEST_CASE("RemedyFor warns where a kind has no hostIPC field for its pods", "[shm_remedy]") {
  Remedy pe = Patched(test::Yaml(R"(
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  templates:
  - name: train
    container: {image: t, resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}}
)"),
                      2 * kGi, PodSecurityLevel::kPrivileged, {}, HostIpcAlways());
  CHECK(pe.verdict == Verdict::kPatch);
  const Finding* unavailable = test::FindingOf(pe.findings, Check::kHostIpcUnavailable);
  REQUIRE(unavailable != nullptr);
  CHECK(unavailable->Value("kind") == "Workflow");
  CHECK(test::FindingOf(pe.findings, Check::kHostIpcMissing) == nullptr);
  CHECK_THAT(pe.patch.Text(), !Catch::Contains("hostIPC"));
}

TEST_CASE("RemedyFor copies the effective sizing annotations onto a controller's pod template", "[shm_remedy]") {
  Remedy pe = Patched(test::Yaml(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata: {annotations: {shmguard.io/num-workers: "4", shmguard.io/batch-bytes: 64Mi}}
    spec:
      containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 64Gi}}}]
)"),
                      2 * kGi);
  const json ops = pe.patch.ToJson();
  json annotations;
  for (const auto& op : ops) {
    if (op["path"] == "/spec/template/metadata/annotations/shmguard.io~1nodes") annotations["nodes"] = op["value"];
    if (op["path"] == "/spec/template/metadata/annotations/shmguard.io~1plan") annotations["plan"] = op["value"];
  }
  CHECK(annotations["nodes"] == "2");  // Job parallelism: the pods know they train together
  CHECK(annotations["plan"] == "{}");
  // A Pod carries its own annotations: only the plan is added.
  Remedy pod = Patched(test::Yaml(kTwoGpuPod), 2 * kGi);
  CHECK_THAT(pod.patch.Text(), !Catch::Contains("shmguard.io~1nodes"));
}

TEST_CASE("RemedyFor warns when a sizeLimit is above the memory limit, which the kubelet caps", "[shm_remedy]") {
  Remedy pe = Patched(test::Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 128Gi}}]
  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 1, memory: 64Gi}},
                volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
)"),
                      2 * kGi);
  const Finding* over = test::FindingOf(pe.findings, Check::kSizeLimitOverMemoryLimit);
  REQUIRE(over != nullptr);
  CHECK(over->pointer == "/spec/volumes/0/emptyDir/sizeLimit");
  CHECK(over->Number("size_bytes") == 128 * kGi);
  CHECK(over->Number("memory_limit_bytes") == 64 * kGi);
}

TEST_CASE("RemedyFor leaves out an exempted part, and writes nothing when every part is", "[shm_remedy]") {
  const json pod = test::Yaml(kTwoGpuIbPod);
  const Policy always = HostIpcAlways();
  Remedy no_lock = Patched(pod, 2 * kGi, PodSecurityLevel::kPrivileged, {Check::kIpcLockMissing}, always);
  CHECK(no_lock.verdict == Verdict::kPatch);
  CHECK_THAT(no_lock.patch.Text(), !Catch::Contains("IPC_LOCK") && Catch::Contains("hostIPC"));
  const Finding* lock = test::FindingOf(no_lock.findings, Check::kIpcLockMissing);
  REQUIRE(lock != nullptr);
  CHECK(lock->suppressed);  // still reported
  Remedy none = Patched(pod, 2 * kGi, PodSecurityLevel::kPrivileged,
                        {Check::kShmBelowNeed, Check::kIpcLockMissing, Check::kHostIpcMissing}, always);
  CHECK(none.verdict == Verdict::kOk);
  CHECK(none.patch.empty());  // not even the plan annotation
  for (const auto& f : none.findings) CHECK(f.suppressed);
}

// RemedyFor a kind shmguard does not patch, `t` with `mount`, needing `required` bytes.
Remedy Judged(const PodTemplate& t, const Workload& w, const ShmMount& mount, const std::string& current,
              int64_t required) {
  PodReading r;
  r.mount = mount;
  const NamespaceRule rule;
  const Policy policy;
  const PodContext ctx;
  return Settled(RemedyFor({t, w, rule, policy, ctx}, r, {required, &kNoNote, 0, nullptr, current}), ctx);
}

TEST_CASE("RemedyFor judges what a kind shmguard never patches has", "[shm_remedy]") {
  const json trainjob = test::Yaml(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj, namespace: a}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 4, memory: 128Gi}}}
)");
  auto w = FindPodTemplates(trainjob);  // no runtime in the input: its /dev/shm is unknown
  REQUIRE(w.has_value());
  REQUIRE_FALSE(w->templates.empty());
  const PodTemplate& t = w->templates[0];
  REQUIRE_FALSE(t.patchable);
  REQUIRE_FALSE(t.shm_unknown.empty());
  const ShmMount none;
  Remedy unknown = Judged(t, *w, none, "unknown", 4 * kGi);  // its pods are patched when created
  CHECK(unknown.verdict == Verdict::kOk);
  CHECK(test::Ids(unknown.findings) == std::vector<std::string>{"shm-patched-at-creation"});
  CHECK(unknown.findings[0].Number("required_bytes") == 4 * kGi);
  CHECK(unknown.findings[0].Value("unknown") == t.shm_unknown);
  ShmMount host_path;
  host_path.kind = ShmMountKind::kOther;
  Remedy denied = Judged(t, *w, host_path, "hostPath /dev/shm", 4 * kGi);  // never overwritten
  CHECK(denied.verdict == Verdict::kDeny);
  REQUIRE(test::Ids(denied.findings) == std::vector<std::string>{"shm-below-need"});
  CHECK(denied.findings[0].severity == Severity::kError);
  CHECK(denied.findings[0].Number("required_bytes") == 4 * kGi);
  CHECK(denied.findings[0].Number("unpatched") == 1);
  CHECK(denied.findings[0].Value("current") == "hostPath /dev/shm");
  CHECK(denied.findings[0].Value("kind") == "TrainJob");
  ShmMount memory;
  memory.kind = ShmMountKind::kMemoryEmptyDir;
  memory.size_limit = 8 * kGi;
  Remedy covered = Judged(t, *w, memory, "emptyDir Memory 8Gi", 4 * kGi);
  CHECK(covered.verdict == Verdict::kOk);
  REQUIRE(test::Ids(covered.findings) == std::vector<std::string>{"shm-sufficient"});
  CHECK(covered.findings[0].Number("required_bytes") == 4 * kGi);
  CHECK(covered.findings[0].Value("current") == "emptyDir Memory 8Gi");
  CHECK(covered.findings[0].Value("kind") == "TrainJob");
}

}  // namespace
}  // namespace shmguard
