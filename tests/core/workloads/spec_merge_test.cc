// MergeSpec: a runtime's pod template overlaid as the API server's strategic merge does it —
// objects member by member, the lists Kubernetes merges by key item by item, any other list
// replaced — and ObjectAt, which makes the objects of a path.
#include "core/workloads/internal/spec_merge.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard::workloads {
namespace {

using nlohmann::json;

TEST_CASE("MergeSpec merges containers, volumes, env by name and mounts by path, and replaces other lists",
          "[spec_merge]") {
  json into = test::Yaml(R"(
containers:
- name: trainer
  image: a
  args: [--x]
  env: [{name: A, value: '1'}, {name: B, value: '2'}]
  volumeMounts: [{name: data, mountPath: /data}]
volumes: [{name: data, emptyDir: {}}]
nodeSelector: {gpu: a100}
)");
  const json patch = test::Yaml(R"(
containers:
- name: trainer
  args: [--y]
  env: [{name: B, value: '3'}, {name: C, value: '4'}]
  volumeMounts: [{name: shm, mountPath: /data}, {name: dshm, mountPath: /dev/shm}]
- name: sidecar
  image: s
volumes: [{name: dshm, emptyDir: {medium: Memory}}]
nodeSelector: {zone: b}
)");
  MergeSpec(into, patch);
  const json want = test::Yaml(R"(
containers:
- name: trainer
  image: a
  args: [--y]
  env: [{name: A, value: '1'}, {name: B, value: '3'}, {name: C, value: '4'}]
  volumeMounts: [{name: shm, mountPath: /data}, {name: dshm, mountPath: /dev/shm}]
- name: sidecar
  image: s
volumes: [{name: data, emptyDir: {}}, {name: dshm, emptyDir: {medium: Memory}}]
nodeSelector: {gpu: a100, zone: b}
)");
  CHECK(into == want);
}

TEST_CASE("MergeSpec merges a JobSet's replicatedJobs by name, and an item without its key is added", "[spec_merge]") {
  json into = test::Yaml("replicatedJobs: [{name: node, replicas: 1}]");
  MergeSpec(into, test::Yaml("replicatedJobs: [{name: node, replicas: 4}, {replicas: 2}]"));
  CHECK(into == test::Yaml("replicatedJobs: [{name: node, replicas: 4}, {replicas: 2}]"));
  json scalar = test::Yaml("a: 1");
  MergeSpec(scalar, test::Yaml("a: [1, 2]"));
  CHECK(scalar == test::Yaml("a: [1, 2]"));  // another type: replaced
}

TEST_CASE("ObjectAt makes the objects of a path, and refuses one that is not an object", "[spec_merge]") {
  json j = json::object();
  json* at = ObjectAt(j, {"spec", "template", "metadata"});
  REQUIRE(at != nullptr);
  (*at)["x"] = 1;
  CHECK(j == test::Yaml("spec: {template: {metadata: {x: 1}}}"));
  json list = test::Yaml("spec: [1]");
  CHECK(ObjectAt(list, {"spec", "template"}) == nullptr);
  json value = test::Yaml("spec: {template: 3}");
  CHECK(ObjectAt(value, {"spec", "template"}) == nullptr);
}

}  // namespace
}  // namespace shmguard::workloads
