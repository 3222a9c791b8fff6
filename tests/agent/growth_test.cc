// Grower against the agent's API fake: growth in place asked once per pod and volume where the
// policy's rule or the namespace's label turns it on, twice the sizeLimit up to the cap; a pod
// that cannot grow, and a resize the API server refuses or silently drops, each said with
// ShmGrowthRefused; the outcome the sampler saw, said with ShmGrown or a time-out.
#include "agent/growth.h"

#include <catch2/catch.hpp>

#include "agent/rest_fake.h"
#include "test_util.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

struct Setup {
  test::RestFake api;
  Policy policy;
  PodTable table{0.9};
  std::shared_ptr<kube::KubeClient> client = api.Client();
  EventRecorder events{client, "n1", table};
  ProfileRecorder profiles{client, table};
  Grower grower{client, policy, table, events, profiles, false};

  explicit Setup(bool rule_on) {
    NamespaceRule grow;
    grow.match = {"ml"};
    grow.grow_in_place = rule_on;
    policy.namespaces = {grow};
  }
  // The pod of `ns` with a dshm of `size_limit` and a memory limit of `memory`, in the table and
  // at the fake, and the ShmWatch of a crossing.
  AgentPod Pod(const std::string& uid, const std::string& ns, const std::string& size_limit,
               const std::string& memory) {
    json pod = test::Yaml("{apiVersion: v1, kind: Pod, metadata: {uid: " + uid + ", namespace: " + ns + ", name: p-" +
                          uid + R"(}, spec: {volumes: [{name: dshm, emptyDir: {medium: Memory}}],
        containers: [{name: t, resources: {limits: {}}, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]}})");
    if (!size_limit.empty()) pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] = size_limit;
    if (!memory.empty()) pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = memory;
    api.Put("/api/v1/namespaces/" + ns + "/pods/p-" + uid, pod);
    table.Upsert(pod);
    AgentPod p;
    table.With([&](std::map<std::string, AgentPod>& pods) { p = pods.at(uid); });
    return p;
  }
  std::vector<std::string> Reasons() {
    std::vector<std::string> out;
    for (const auto& e : api.Events()) out.push_back(e["reason"]);
    return out;
  }
};

ShmWatch Crossed() {
  ShmWatch w(0.9);
  w.Observe(95 << 20, 100 << 20);
  return w;
}

TEST_CASE("Grower asks once for twice the sizeLimit where growth is on, and says what became of it", "[growth][net]") {
  Setup s(true);
  AgentPod pod = s.Pod("u1", "ml", "100Mi", "1Gi");
  s.grower.Grow(pod, "dshm", Crossed());
  REQUIRE(s.api.Resizes().size() == 1);
  CHECK(json::parse(s.api.Resizes()[0])["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "200Mi");
  CHECK(s.grower.counts().requested == 1);
  s.table.With([&](std::map<std::string, AgentPod>& pods) { pod = pods.at("u1"); });
  s.grower.Grow(pod, "dshm", Crossed());  // once per pod and volume
  CHECK(s.api.Resizes().size() == 1);
  s.grower.Settle(ResizeOutcome{pod.Summary(), "dshm", pod.growth.at("dshm"), true});
  CHECK(s.grower.counts().grown == 1);
  CHECK(s.Reasons() == std::vector<std::string>{"ShmGrown"});
}

TEST_CASE("Grower says why a pod is not grown: no room, no sizeLimit, a refusal, growth off", "[growth][net]") {
  Setup s(true);
  s.grower.Grow(s.Pod("u1", "ml", "", "1Gi"), "dshm", Crossed());       // no sizeLimit: the limit already
  s.grower.Grow(s.Pod("u2", "ml", "512Mi", "1Gi"), "dshm", Crossed());  // at maxFractionOfMemoryLimit
  s.api.resize = test::RestFake::Resize::kReject;
  s.grower.Grow(s.Pod("u3", "ml", "100Mi", "1Gi"), "dshm", Crossed());  // 422 from the API server
  s.api.resize = test::RestFake::Resize::kDropVolumes;
  s.grower.Grow(s.Pod("u4", "ml", "100Mi", "1Gi"), "dshm", Crossed());     // 200, the sizeLimit kept
  s.grower.Grow(s.Pod("u5", "other", "100Mi", "1Gi"), "dshm", Crossed());  // growth off there: nothing
  CHECK(s.grower.counts().refused == 2);
  CHECK(s.grower.counts().rejected == 2);
  CHECK(s.Reasons() == std::vector<std::string>(4, "ShmGrowthRefused"));
  const auto events = s.api.Events();
  CHECK_THAT(events[3]["message"].get<std::string>(), Catch::Contains("InPlacePodVerticalScalingMemoryBackedVolumes"));
  CHECK(s.api.Resizes().size() == 2);
}

TEST_CASE("Grower reads the namespace's label where no rule turns growth on", "[growth][net]") {
  Setup s(false);
  s.api.Put("/api/v1/namespaces/labelled",
            test::Yaml("{metadata: {name: labelled, labels: {shmguard.io/grow-in-place: 'true'}}}"));
  s.grower.Grow(s.Pod("u1", "labelled", "100Mi", "1Gi"), "dshm", Crossed());
  s.grower.Grow(s.Pod("u2", "ml", "100Mi", "1Gi"), "dshm", Crossed());
  CHECK(s.api.Resizes().size() == 1);
}

}  // namespace
}  // namespace shmguard::agent
