// ReadLaunchFacts (through ReadPodFacts, which calls it): processes per pod and nodes in the order
// of docs/sources.md §2, and the NCCL settings.
#include "core/facts/launch_facts.h"

#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "test_util.h"

namespace shmguard {
namespace {

TEST_CASE("ReadLaunchFacts finds processes per pod in the documented order", "[launch_facts]") {
  struct Case {
    const char* name;
    const char* yaml;
    int64_t procs;
    const char* source;
  };
  const Case cases[] = {
      {"annotation wins", R"(
apiVersion: v1
kind: Pod
metadata: {annotations: {shmguard.io/procs-per-pod: "3"}}
spec:
  containers:
  - name: t
    env: [{name: PET_NPROC_PER_NODE, value: "5"}]
    command: [torchrun, --nproc_per_node=6]
    resources: {limits: {nvidia.com/gpu: 7}}
)",
       3, "annotation"},
      {"env before flag", R"(
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: t
    env: [{name: PET_NPROC_PER_NODE, value: "5"}]
    command: [torchrun, --nproc_per_node=6]
)",
       5, "env PET_NPROC_PER_NODE=5"},
      {"flag with =", R"(
apiVersion: v1
kind: Pod
spec:
  containers: [{name: t, command: [torchrun, "--nproc_per_node=6", train.py]}]
)",
       6, "--nproc_per_node=6"},
      {"dashed flag with space, inside a shell string", R"(
apiVersion: v1
kind: Pod
spec:
  containers: [{name: t, command: [bash, -c], args: ["cd /w && torchrun --nproc-per-node 4 train.py"]}]
)",
       4, "--nproc_per_node=4"},
      {"auto means GPUs", R"(
apiVersion: v1
kind: Pod
spec:
  containers:
  - {name: t, env: [{name: PET_NPROC_PER_NODE, value: auto}], resources: {limits: {nvidia.com/gpu: "8"}}}
)",
       8, "(8 GPUs)"},
      {"templated flag falls through to GPUs", R"(
apiVersion: v1
kind: Pod
spec:
  containers:
  - {name: t, command: [torchrun, --nproc_per_node=$GPUS], resources: {requests: {amd.com/gpu: 2}}}
)",
       2, "2 GPUs in the pod"},
      {"default", R"(
apiVersion: v1
kind: Pod
spec:
  containers: [{name: t}]
)",
       1, "default"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    PodFacts f = test::OnlyFacts(c.yaml);
    CHECK(f.procs == c.procs);
    CHECK_THAT(f.procs_source, Catch::Contains(c.source));
  }
}

TEST_CASE("ReadLaunchFacts reads env and flags of app containers only, the first that gives each", "[launch_facts]") {
  // The init container's flag is not the trainer's; the first app container with a value wins.
  PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  initContainers: [{name: setup, command: [torchrun, --nproc_per_node=7, --nnodes=9]}]
  containers:
  - {name: sidecar}
  - {name: a, command: [torchrun, --nproc_per_node=2, --nnodes=3]}
  - {name: b, command: [torchrun, --nproc_per_node=5, --nnodes=6]}
)");
  CHECK(f.procs == 2);
  CHECK(f.nodes == 3);
  CHECK(f.nodes_source == "--nnodes=3");
}

TEST_CASE("ReadLaunchFacts takes each env variable's first entry with a string value", "[launch_facts]") {
  struct Case {
    const char* name;
    const char* env;
    int64_t nodes;
    const char* source;
  };
  const Case cases[] = {
      {"the first of two entries", "[{name: PET_NNODES, value: \"2\"}, {name: PET_NNODES, value: \"3\"}]", 2,
       "env PET_NNODES=2"},
      {"an entry from a ConfigMap is passed over",
       "[{name: PET_NNODES, valueFrom: {configMapKeyRef: {name: c, key: k}}}, {name: PET_NNODES, value: \"4\"}]", 4,
       "env PET_NNODES=4"},
      {"only the exact name", "[{name: PET_NNODES_MAX, value: \"5\"}, {name: PET_NNODE, value: \"6\"}]", 1, "default"},
      {"an entry without a name", "[{value: \"7\"}, {name: PET_NNODES, value: \"8\"}]", 8, "env PET_NNODES=8"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      PodFacts f = test::OnlyFacts(std::string("apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: t, env: ") +
                                   c.env + "}]\n");
      CHECK(f.nodes == c.nodes);
      CHECK(f.nodes_source == c.source);
    }
  }
}

TEST_CASE("ReadLaunchFacts names an annotation that is not a count in range", "[launch_facts]") {
  struct Case {
    const char* annotation;
    const char* says;
  };
  for (const Case& c : {
           Case{"shmguard.io/procs-per-pod: \"0\"", "must be a whole number from 1 to"},
           Case{"shmguard.io/procs-per-pod: \"four\"", "\"four\" must be a whole number"},
           Case{"shmguard.io/procs-per-pod: 4", "annotation values must be strings"},
           Case{"shmguard.io/nodes: \"-2\"", "must be a whole number from 1 to"},
       }) {
    CAPTURE(c.annotation);
    auto f = test::ReadOnlyFacts(std::string("apiVersion: v1\nkind: Pod\nmetadata: {annotations: {") + c.annotation +
                                 "}}\nspec: {containers: [{name: t}]}\n");
    REQUIRE_FALSE(f.has_value());
    CHECK(f.error().code == Code::kInvalidInput);
    CHECK_THAT(f.error().where.annotation, Catch::StartsWith("shmguard.io/"));
    CHECK_THAT(f.error().message, Catch::Contains(c.says));
  }
}

TEST_CASE("ReadLaunchFacts finds nodes in the documented order", "[launch_facts]") {
  CHECK(test::OnlyFacts(
            "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: t, env: [{name: PET_NNODES, value: \"1:4\"}]}]\n")
            .nodes == 4);
  CHECK(test::OnlyFacts(
            "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: t, args: [\"torchrun --nnodes=2 x.py\"]}]\n")
            .nodes == 2);
  CHECK(test::OnlyFacts(
            "apiVersion: v1\nkind: Pod\nmetadata: {annotations: {shmguard.io/nodes: \"16\"}}\nspec:\n  containers: "
            "[{name: t}]\n")
            .nodes == 16);
  CHECK(test::OnlyFacts(
            "apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 3\n  template: {spec: {containers: [{name: t}]}}\n")
            .nodes == 3);
  CHECK(test::OnlyFacts("apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: t}]\n").nodes == 1);
}

TEST_CASE("ReadLaunchFacts reads NCCL_SHM_DISABLE and NCCL_P2P_DISABLE from the GPU containers", "[launch_facts]") {
  SECTION("a CPU sidecar's setting is not the trainer's") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  containers:
  - {name: proxy, env: [{name: NCCL_SHM_DISABLE, value: "1"}, {name: NCCL_P2P_DISABLE, value: "1"}]}
  - {name: trainer, resources: {limits: {nvidia.com/gpu: 4}}}
)");
    CHECK_FALSE(f.nccl_shm_disabled);
    CHECK_FALSE(f.nccl_p2p_disabled);
  }
  SECTION("a GPU container's, naming it") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: trainer
    env: [{name: NCCL_SHM_DISABLE, value: "1"}, {name: NCCL_P2P_DISABLE, value: "0"}]
    resources: {limits: {nvidia.com/gpu: 4}}
)");
    CHECK(f.nccl_shm_disabled);
    CHECK(f.nccl_shm_disabled_source == "container \"trainer\"");
    CHECK_FALSE(f.nccl_p2p_disabled);  // only "1" disables
  }
  SECTION("without GPUs, any app container's") {
    PodFacts f = test::OnlyFacts(R"(
apiVersion: v1
kind: Pod
spec:
  containers: [{name: cpu, env: [{name: NCCL_P2P_DISABLE, value: "1"}]}]
)");
    CHECK(f.nccl_p2p_disabled);
    CHECK(f.nccl_p2p_disabled_source == "container \"cpu\"");
  }
}

}  // namespace
}  // namespace shmguard
