// Compose documents: each service read as a pod, its /dev/shm, the plan and verdict, and the
// shm_size/ulimits patch (Docker's byte values in docker_bytes_test.cc).
#include "core/workloads/compose.h"

#include <catch2/catch.hpp>

#include "core/facts/shm_mount.h"
#include "core/patch/compose_patch.h"
#include "core/values/quantity.h"
#include "core/verdict/evaluation.h"
#include "io/files/manifests.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kGi = int64_t{1} << 30;

TEST_CASE("A Compose document is recognised by its content", "[compose]") {
  CHECK(IsComposeDocument(test::Yaml("services: {a: {image: x}}")));
  CHECK(IsComposeDocument(test::Yaml("name: app\nservices: {}\nvolumes: {v: {}}")));
  CHECK_FALSE(IsComposeDocument(test::Yaml("kind: Pod\nservices: {a: {}}")));
  CHECK_FALSE(IsComposeDocument(test::Yaml("apiVersion: v1\nservices: {a: {}}")));
  CHECK_FALSE(IsComposeDocument(test::Yaml("services: [a, b]")));
  CHECK_FALSE(IsComposeDocument(test::Yaml("version: '3'")));
  Evaluation bad = Evaluate(test::Yaml("version: '3'\nnetworks: {}"), Policy{});
  CHECK(bad.verdict == Verdict::kSkip);
  CHECK(test::Ids(bad.findings) == std::vector<std::string>{"not-a-workload"});
  CHECK_THAT(bad.findings.at(0).Value("error"), Catch::Contains("nor a Compose file"));
}

// Evaluate a Compose document; the pod of service `name`.
const PodEvaluation& Service(const Evaluation& ev, const std::string& name) {
  for (const auto& p : ev.pods) {
    if (p.label == "service " + name) return p;
  }
  FAIL("no service " << name);
  throw;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

const char* kServices = R"(name: training
x-gpu: &gpu
  resources:
    reservations:
      devices: [{driver: nvidia, count: 4, capabilities: [gpu]}]
services:
  sized:
    image: trainer
    shm_size: 1g
    mem_limit: 64g
    command: torchrun --nproc_per_node=4 train.py
    devices: ["/dev/infiniband/uverbs0:/dev/infiniband/uverbs0"]
    labels:
      shmguard.io/num-workers: 8
      shmguard.io/batch-bytes: 48Mi
    deploy: *gpu
  listed:
    image: trainer
    labels: ["shmguard.io/num-workers=2", "shmguard.io/batch-bytes=16Mi", "team=a"]
    deploy:
      resources:
        limits: {memory: 32G}
        reservations:
          devices: [{capabilities: [gpu], device_ids: ["0", "1"]}]
    ulimits:
      memlock: {soft: -1, hard: -1}
  host:
    image: trainer
    ipc: host
    gpus: all
    labels: {shmguard.io/num-workers: "4", shmguard.io/batch-bytes: 8Mi}
  everything:
    image: trainer
    deploy:
      resources:
        reservations:
          devices: [{driver: nvidia, count: all, capabilities: [gpu]}]
  new-gpus:
    image: trainer
    gpus: [{driver: nvidia, count: 2}]
    user: "1000"  # a ulimit holds for any user, where a capability would not
    ulimits: {nofile: 65536, memlock: 1024}
    environment: {NCCL_P2P_DISABLE: 1, FI_PROVIDER: efa}
  broken:
    image: trainer
    shm_size: 2 gigs
    gpus: all
  web:
    image: nginx
  shared:
    image: trainer
    ipc: "service:host"
    gpus: all
)";

TEST_CASE("Every service of a Compose file is a pod of its own", "[compose]") {
  auto w = FindPodTemplates(test::Yaml(kServices));
  REQUIRE(w.has_value());
  CHECK(w->kind == "Compose");
  CHECK(w->name == "training");
  CHECK(w->separate_pods);
  REQUIRE(w->templates.size() == 8);
  std::map<std::string, int64_t> gpus;
  for (const auto& t : w->templates) {
    CAPTURE(t.label);
    CHECK(t.spec_pointer == "/services/" + t.label.substr(8));
    if (t.error) continue;
    auto f = ReadPodFacts(t, Policy{});
    REQUIRE(f.has_value());
    gpus[t.label] = f->gpus;
  }
  CHECK(gpus == std::map<std::string, int64_t>{{"service broken", 1},
                                               {"service everything", 1},
                                               {"service host", 1},
                                               {"service listed", 2},
                                               {"service new-gpus", 2},
                                               {"service shared", 1},
                                               {"service sized", 4},
                                               {"service web", 0}});
}

TEST_CASE("A sized service gets shm_size, unlimited memlock where it uses RDMA, ipc: host keeps the host's",
          "[compose]") {
  json doc = test::Yaml(kServices);
  Evaluation ev = Evaluate(doc, Policy{});
  CHECK(ev.kind == "Compose");
  CHECK(ev.namespace_name.empty());

  const PodEvaluation& sized = Service(ev, "sized");
  CAPTURE(Joined(test::Words(sized.findings)));
  REQUIRE(sized.plan);
  CHECK(sized.verdict == Verdict::kPatch);
  CHECK(sized.current_shm == "shm_size 1g (1Gi)");
  const Finding& plan = sized.findings.at(0);
  CHECK(plan.check == Check::kShmPlan);
  CHECK(plan.Number("required_bytes") == 4401ll << 20);
  CHECK(plan.Number("procs") == 4);
  CHECK(plan.Number("workers") == 8);
  CHECK(plan.Value("volume") == "/dev/shm");
  CHECK(plan.Value("procs_source") == "--nproc_per_node=4");
  CHECK(sized.memory_limit_bytes == 64 * kGi);
  CHECK(sized.patch.ToJson() ==
        json::parse(R"([{"op":"replace","path":"/services/sized/shm_size","value":")" +
                    FormatDockerBytes(sized.plan->required_bytes) +
                    R"("},{"op":"add","path":"/services/sized/ulimits","value":{"memlock":-1}}])"));
  CHECK(sized.changes.at(0) == "set shm_size: " + FormatDockerBytes(sized.plan->required_bytes) + " (was 1g)");
  const Finding* lock = test::FindingOf(sized.findings, Check::kIpcLockMissing);
  REQUIRE(lock != nullptr);
  CHECK(lock->pointer == "/services/sized/ulimits/memlock");
  CHECK(lock->Value("reason") == "devices /dev/infiniband/uverbs0");

  const PodEvaluation& listed = Service(ev, "listed");
  CAPTURE(Joined(test::Words(listed.findings)));
  CHECK(listed.verdict == Verdict::kPatch);
  CHECK(listed.memory_limit_bytes == 32 * kGi);
  CHECK(test::FindingOf(listed.findings, Check::kShmPlan)->Number("procs") == 2);
  CHECK(test::FindingOf(listed.findings, Check::kShmPlan)->Value("procs_source") == "2 GPUs in the pod");
  CHECK(test::FindingOf(listed.findings, Check::kMemoryHeadroom)->Number("memory_limit_bytes") == 32 * kGi);
  CHECK(test::FindingOf(listed.findings, Check::kMemoryHeadroom)->Value("volume") == "/dev/shm");
  REQUIRE(listed.patch.size() == 1);  // memlock is already unlimited
  CHECK(listed.patch.ToJson()[0]["path"] == "/services/listed/shm_size");
  CHECK(listed.patch.ToJson()[0]["op"] == "add");

  const PodEvaluation& host = Service(ev, "host");
  CAPTURE(Joined(test::Words(host.findings)));
  CHECK(host.current_shm == "the host's /dev/shm (ipc: host)");
  CHECK(host.verdict == Verdict::kOk);  // the host's /dev/shm, and no RDMA: no memlock to raise
  CHECK(test::FindingOf(host.findings, Check::kComposeIpcHost) != nullptr);
  CHECK(test::FindingOf(host.findings, Check::kIpcLockMissing) == nullptr);
  CHECK(host.patch.empty());
  const Finding* unlimited = test::FindingOf(host.findings, Check::kMemoryLimitMissing);
  REQUIRE(unlimited != nullptr);
  CHECK(unlimited->Number("compose") == 1);
  CHECK(unlimited->Value("limit_source") == "the service sets no mem_limit");

  const PodEvaluation& everything = Service(ev, "everything");
  CHECK(everything.estimated);
  CHECK(everything.verdict == Verdict::kPatch);
  CHECK(everything.findings.at(0).check == Check::kComposeGpuCountUnknown);

  const PodEvaluation& new_gpus = Service(ev, "new-gpus");
  CHECK(new_gpus.verdict == Verdict::kPatch);
  CHECK(test::FindingOf(new_gpus.findings, Check::kNcclP2pDisabled) != nullptr);
  CHECK(new_gpus.patch.ToJson()[1] ==
        json::parse(R"({"op":"replace","path":"/services/new-gpus/ulimits/memlock","value":-1})"));
  CHECK(new_gpus.changes.at(1) == "set ulimits.memlock: -1 (unlimited locked memory, for RDMA registration; was 1024)");
  CHECK(test::FindingOf(new_gpus.findings, Check::kIpcLockMissing)->Value("reason") == "env FI_PROVIDER=efa");

  const PodEvaluation& broken = Service(ev, "broken");
  CHECK(broken.verdict == Verdict::kDeny);
  CHECK(broken.findings.back().check == Check::kObjectInvalid);
  CHECK(broken.findings.back().pointer == "/services/broken/shm_size");
  CHECK(broken.findings.back().Value("error") ==
        "\"2 gigs\" is not a size Docker reads (unknown unit): write bytes, or a number with k, m, g, t or p (\"2g\", "
        "\"512m\")");
  CHECK(broken.patch.empty());

  const PodEvaluation& web = Service(ev, "web");
  CHECK(web.verdict == Verdict::kOk);
  CHECK(web.current_shm == "64Mi (Docker's default)");
  CHECK(web.patch.empty());

  const PodEvaluation& shared = Service(ev, "shared");
  CHECK(shared.verdict == Verdict::kOk);
  CHECK(shared.current_shm == "the IPC namespace of service host (ipc: service:host)");

  // One denied service does not hold back the others' patches.
  CHECK(ev.verdict == Verdict::kDeny);
  CHECK_FALSE(ev.patch.empty());

  // Applied, the patch leaves nothing more to do.
  json patched = doc.patch(ev.patch.ToJson());
  Evaluation again = Evaluate(patched, Policy{});
  for (const auto& p : again.pods) {
    CAPTURE(p.label, Joined(test::Words(p.findings)));
    CHECK(p.patch.empty());
    if (p.label != "service broken") CHECK(p.verdict == Verdict::kOk);
  }
}

TEST_CASE("A Compose service's memory limit denies what does not fit, naming mem_limit", "[compose]") {
  Evaluation ev = Evaluate(test::Yaml(R"(services:
  small:
    mem_limit: 4g
    labels: [shmguard.io/num-workers=16, shmguard.io/batch-bytes=256Mi]
    gpus: [{count: 2}]
  bad-limit:
    mem_limit: [4g]
    gpus: all
  bad-count:
    deploy: {resources: {reservations: {devices: [{capabilities: [gpu], count: some}]}}}
)"),
                           Policy{});
  const PodEvaluation& small = Service(ev, "small");
  CHECK(small.verdict == Verdict::kDeny);
  const Finding* over = test::FindingOf(small.findings, Check::kShmOverMemoryLimit);
  REQUIRE(over != nullptr);
  CHECK(over->Number("memory_limit_bytes") == 4 * kGi);
  CHECK(over->Value("limit_source") == "mem_limit");
  const Finding& bad_limit = Service(ev, "bad-limit").findings.at(0);
  CHECK(bad_limit.pointer == "/services/bad-limit/mem_limit");
  CHECK(bad_limit.Value("error") == "must be a number of bytes or a size such as \"2g\"");
  const Finding& bad_count = Service(ev, "bad-count").findings.at(0);
  CHECK(bad_count.pointer == "/services/bad-count/deploy/resources/reservations/devices/0/count");
  CHECK(bad_count.Value("error") == "must be a number or \"all\", not \"some\"");
}

TEST_CASE("The Compose files of the corpus agree with their facts", "[compose][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  json facts = json::parse(test::ReadCorpus("world/facts.json"));
  int checked = 0;
  for (const auto& [file, entries] : facts.items()) {
    if (entries.empty() || !entries[0]["kind"].is_null()) continue;
    auto docs = io::ParseManifests(test::ReadCorpus("world/" + file), file);
    REQUIRE(docs.size() == 1);
    const json object = docs[0].object->ToJson();
    auto w = FindPodTemplates(object);
    REQUIRE(w.has_value());
    Evaluation ev = Evaluate(object, Policy{});
    for (const auto& e : entries) {
      CAPTURE(file, e.dump());
      const PodTemplate* t = nullptr;
      for (const auto& c : w->templates) {
        if (c.spec_pointer == e["path"]) t = &c;
      }
      REQUIRE(t != nullptr);
      auto f = ReadPodFacts(*t, Policy{});
      REQUIRE(f.has_value());
      const int64_t gpus = e["gpus_per_pod"];
      CHECK(f->gpus == (gpus == -1 ? 1 : gpus));  // every GPU of the host: sized for one
      CHECK(!t->findings.empty() == (gpus == -1));
      CHECK(f->host_ipc == e["host_ipc"].get<bool>());
      const PodEvaluation& p = Service(ev, e["name"]);
      if (e["dev_shm"] == "compose-shm_size") {
        CHECK(p.current_shm == "shm_size " + e["size"].get<std::string>() + " (" +
                                   FormatBytes(*ParseDockerBytes(e["size"].get<std::string>(), "size")) + ")");
      } else if (e["host_ipc"] == true) {
        CHECK(p.current_shm == "the host's /dev/shm (ipc: host)");
      } else {
        CHECK(p.current_shm == "64Mi (Docker's default)");
      }
      // A GPU service is sized: it keeps enough or is patched to it, never denied.
      if (gpus != 0) CHECK(p.required_bytes > 0);
      CHECK(p.verdict != Verdict::kDeny);
      ++checked;
    }
  }
  CHECK(checked == 11);
}

}  // namespace
}  // namespace shmguard
