// ReadPod: a pod template read once for its evaluation — whether it is sized from DataLoader
// annotations and what they say (or which one is malformed), and what it has at /dev/shm, in
// words and in bytes.
#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/workloads/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

PodReading ReadOf(const std::string& yaml) {
  static json object;
  object = test::Yaml(yaml);
  const Workload w = test::OnlyTemplate(object);
  return ReadPod(w.templates[0], Policy{});
}

TEST_CASE("ReadPod reads the DataLoader annotations, and names the one that is malformed", "[pod_reading]") {
  const PodReading sized = ReadOf(R"(apiVersion: v1
kind: Pod
metadata: {annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 48Mi}}
spec: {containers: [{name: t, resources: {limits: {nvidia.com/gpu: 2}}}]}
)");
  CHECK(sized.sized);
  CHECK_FALSE(sized.sizing_error);
  CHECK(sized.inputs.workers == 8);
  CHECK(sized.inputs.prefetch_factor == 2);  // the policy's default
  CHECK(sized.inputs.batch_bytes == 48 << 20);
  CHECK(sized.inputs.procs == 2);  // one per GPU
  CHECK(sized.current == "64Mi (container default)");

  const PodReading broken = ReadOf(R"(apiVersion: v1
kind: Pod
metadata: {annotations: {shmguard.io/num-workers: "8"}}
spec: {containers: [{name: t}]}
)");
  CHECK(broken.sized);
  REQUIRE(broken.sizing_error);
  CHECK_THAT(broken.sizing_error->ToString(), Catch::Contains("shmguard.io/batch-bytes"));

  const PodReading plain = ReadOf("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: t}]}\n");
  CHECK_FALSE(plain.sized);
  CHECK(plain.inputs.workers == 0);
}

TEST_CASE("ReadPod gives what the pod has at /dev/shm in bytes, where a number applies", "[pod_reading]") {
  constexpr int64_t kMi = int64_t{1} << 20, kGi = int64_t{1} << 30;
  const std::string mount = "volumeMounts: [{name: dshm, mountPath: /dev/shm}]";
  struct Case {
    std::string spec;
    std::optional<int64_t> bytes;
  };
  const Case cases[] = {
      {"containers: [{name: t}]", 64 * kMi},  // the container runtime's
      {"volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]\n  containers: [{name: t, " + mount + "}]",
       2 * kGi},
      // Without sizeLimit the kubelet sizes it at the memory limit, and without one at the node's.
      {"volumes: [{name: dshm, emptyDir: {medium: Memory}}]\n  containers: [{name: t, resources: {limits: {memory: "
       "48Gi}}, " +
           mount + "}]",
       48 * kGi},
      {"volumes: [{name: dshm, emptyDir: {medium: Memory}}]\n  containers: [{name: t, " + mount + "}]", std::nullopt},
      {"hostIPC: true\n  containers: [{name: t}]", std::nullopt},  // the node's /dev/shm
      {"volumes: [{name: dshm, hostPath: {path: /dev/shm}}]\n  containers: [{name: t, " + mount + "}]", std::nullopt},
      {"volumes: {dshm: {}}\n  containers: [{name: t}]", std::nullopt},  // not read
  };
  for (const auto& c : cases) {
    CAPTURE(c.spec);
    const json object = test::Yaml("apiVersion: v1\nkind: Pod\nspec:\n  " + c.spec + "\n");
    const Workload w = test::OnlyTemplate(object);
    CHECK(ReadPod(w.templates[0], Policy{}).current_bytes == c.bytes);
  }
}

}  // namespace
}  // namespace shmguard
