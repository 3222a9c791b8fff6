// ReadShmMount (through ReadPodFacts): what a pod has at /dev/shm, for every kind of volume;
// ReadShm and DescribeShm: what KubeRay and Docker put there, and the words for it.
#include "core/facts/shm_mount.h"

#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/workloads/pod_templates.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

TEST_CASE("ReadShmMount tells what is at /dev/shm", "[shm_mount]") {
  struct Case {
    const char* name;
    const char* spec;
    ShmMountKind kind;
    const char* description;
  };
  const Case cases[] = {
      {"nothing", "containers: [{name: t}]", ShmMountKind::kNone, ""},
      {"an unmounted memory dshm is adopted",
       "volumes: [{name: dshm, emptyDir: {medium: Memory}}]\n  containers: [{name: t}]", ShmMountKind::kMemoryEmptyDir,
       "emptyDir Memory without sizeLimit"},
      {"a memory emptyDir with a sizeLimit",
       "volumes: [{name: s, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]\n  containers: [{name: t, volumeMounts: "
       "[{name: s, mountPath: /dev/shm}]}]",
       ShmMountKind::kMemoryEmptyDir, "emptyDir Memory 2Gi"},
      {"sizeLimit 0 is no limit",
       "volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: \"0\"}}]\n  containers: [{name: t}]",
       ShmMountKind::kMemoryEmptyDir, "emptyDir Memory without sizeLimit"},
      {"an unmounted disk dshm is not", "volumes: [{name: dshm, emptyDir: {}}]\n  containers: [{name: t}]",
       ShmMountKind::kNone, ""},
      {"disk emptyDir",
       "volumes: [{name: s, emptyDir: {}}]\n  containers: [{name: t, volumeMounts: [{name: s, mountPath: /dev/shm}]}]",
       ShmMountKind::kOther, "emptyDir \"s\" on the node's disk (no medium: Memory)"},
      {"hostPath",
       "volumes: [{name: s, hostPath: {path: /dev/shm}}]\n  containers: [{name: t, volumeMounts: [{name: s, mountPath: "
       "/dev/shm}]}]",
       ShmMountKind::kOther, "hostPath /dev/shm (the node's shared memory, not bounded by the pod)"},
      {"undeclared", "containers: [{name: t, volumeMounts: [{name: s, mountPath: /dev/shm}]}]", ShmMountKind::kOther,
       "volume \"s\", which is not declared in spec.volumes"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto f = test::ReadOnlyFacts(std::string("apiVersion: v1\nkind: Pod\nspec:\n  ") + c.spec +
                                 "\n");  // ReadPodFacts, which calls ReadShmMount
    REQUIRE(f.has_value());
    CHECK(f->shm.kind == c.kind);
    CHECK(f->shm.description == c.description);
  }
}

// ReadShm and DescribeShm over the only pod template of `yaml`.
std::string DescribeOnly(const std::string& yaml) {
  json object = test::Yaml(yaml);
  Workload w = test::OnlyTemplate(object);
  const PodTemplate& t = w.templates[0];
  auto f = ReadPodFacts(t, Policy{});
  REQUIRE(f.has_value());
  auto mount = ReadShm(t, *f);
  REQUIRE(mount.has_value());
  return DescribeShm(*mount, t, *f);
}

TEST_CASE("ReadShm adds what KubeRay and Docker give a pod, and DescribeShm says it", "[shm_mount]") {
  const std::string ray =
      "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r}\nspec:\n  headGroupSpec:\n"
      "    template: {spec: {containers: [{name: head, resources: ";
  struct Case {
    const char* name;
    std::string yaml;
    const char* description;
  };
  const Case cases[] = {
      {"a Pod with nothing there", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: t}]}\n",
       "64Mi (container default)"},
      {"a Pod with hostIPC", "apiVersion: v1\nkind: Pod\nspec: {hostIPC: true, containers: [{name: t}]}\n",
       "the node's /dev/shm (hostIPC: true)"},
      {"KubeRay: the Ray container's limit", ray + "{limits: {memory: 16Gi}, requests: {memory: 8Gi}}}]}}\n",
       "emptyDir Memory 16Gi (KubeRay's shared-mem: the Ray container's memory limit)"},
      {"KubeRay: its request without a limit", ray + "{requests: {memory: 8Gi}}}]}}\n",
       "emptyDir Memory 8Gi (KubeRay's shared-mem: the Ray container's memory request)"},
      {"KubeRay: neither", ray + "{}}]}}\n",
       "emptyDir Memory without sizeLimit (KubeRay's shared-mem: the Ray container has no memory limit or request)"},
      {"KubeRay: a mount of its own wins",
       "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r}\nspec:\n  headGroupSpec:\n    template: {spec: "
       "{volumes: [{name: s, emptyDir: {medium: Memory, sizeLimit: 2Gi}}], containers: [{name: head, resources: "
       "{limits: {memory: 16Gi}}, volumeMounts: [{name: s, mountPath: /dev/shm}]}]}}\n",
       "emptyDir Memory 2Gi"},
      {"a Compose service", "services: {t: {image: x}}\n", "64Mi (Docker's default)"},
      {"a Compose service with ipc: host", "services: {t: {image: x, ipc: host}}\n", "the host's /dev/shm (ipc: host)"},
      {"a Compose service with shm_size", "services: {t: {image: x, shm_size: 8gb}}\n", "shm_size 8gb (8Gi)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    CHECK(DescribeOnly(c.yaml) == c.description);
  }
}

}  // namespace
}  // namespace shmguard
