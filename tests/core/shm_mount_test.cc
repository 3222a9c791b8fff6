// ReadShmMount (through ReadPodFacts): what a pod has at /dev/shm, for every kind of volume.
#include <catch2/catch.hpp>

#include "shmguard/pod_facts.h"
#include "shmguard/pod_templates.h"
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
    json pod = test::Yaml(std::string("apiVersion: v1\nkind: Pod\nspec:\n  ") + c.spec + "\n");
    auto w = FindPodTemplates(pod);
    REQUIRE(w.has_value());
    auto f = ReadPodFacts(w->templates[0], Policy{});  // which calls ReadShmMount
    REQUIRE(f.has_value());
    CHECK(f->shm.kind == c.kind);
    CHECK(f->shm.description == c.description);
  }
}

}  // namespace
}  // namespace shmguard
