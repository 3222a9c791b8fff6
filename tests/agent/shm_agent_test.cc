// ShmAgent without an API server: pods given as a list and watch events, volumes sampled through
// a fake statfs, the gauges on its metrics port, and the threshold.
#include "agent/shm_agent.h"

#include <httplib.h>

#include <catch2/catch.hpp>

#include "kube/fake_api.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

json Pod(const std::string& uid, const std::string& name, const std::string& volume = "dshm") {
  return json::parse(R"({"metadata":{"uid":")" + uid + R"(","namespace":"ml","name":")" + name +
                     R"(","ownerReferences":[{"kind":"Job","name":"train","controller":true}]},
      "spec":{"volumes":[{"name":")" +
                     volume + R"(","emptyDir":{"medium":"Memory"}}],
              "containers":[{"name":"t","volumeMounts":[{"name":")" +
                     volume + R"(","mountPath":"/dev/shm"}]}]}})");
}

// A node whose volumes use what `used` says, each 100 MiB, as tmpfs.
struct FakeNode {
  std::map<std::string, uint64_t> used;  // by path
  std::vector<std::string> asked;
  StatFs statfs() {
    return [this](const std::string& path) -> std::optional<FsUse> {
      asked.push_back(path);
      auto it = used.find(path);
      if (it == used.end()) return std::nullopt;
      return FsUse{it->second, 100 << 20, true};
    };
  }
};

constexpr const char* kPath = "/k/pods/u1/volumes/kubernetes.io~empty-dir/dshm";

TEST_CASE("ShmAgent samples each /dev/shm volume of the node's pods under the kubelet's directory", "[shm_agent]") {
  FakeNode node;
  AgentOptions o;
  o.kubelet_dir = "/k";
  ShmAgent agent(o, nullptr, node.statfs());
  agent.SetPods(json::array({Pod("u1", "p1"), Pod("u2", "p2", "shm")}));
  node.used[kPath] = 10 << 20;
  CHECK(agent.SampleOnce().empty());
  CHECK(node.asked == std::vector<std::string>{kPath, "/k/pods/u2/volumes/kubernetes.io~empty-dir/shm"});
  auto uses = agent.Uses();  // u2's volume is not mounted: not shown
  REQUIRE(uses.size() == 1);
  CHECK(uses[0].pod == "p1");
  CHECK(uses[0].workload == "Job/train");
  CHECK(uses[0].used == 10 << 20);
  CHECK(uses[0].size == 100 << 20);
}

TEST_CASE("ShmAgent reports a crossing once and keeps peaks across relists", "[shm_agent]") {
  FakeNode node;
  AgentOptions o;
  o.kubelet_dir = "/k";
  o.threshold = 0.9;
  ShmAgent agent(o, nullptr, node.statfs());
  agent.SetPods(json::array({Pod("u1", "p1")}));
  node.used[kPath] = 95 << 20;
  auto crossed = agent.SampleOnce();
  REQUIRE(crossed.size() == 1);
  CHECK(crossed[0].volume == "dshm");
  CHECK(crossed[0].used == 95 << 20);
  CHECK(agent.SampleOnce().empty());  // still above: said once
  node.used[kPath] = 20 << 20;
  agent.SetPods(json::array({Pod("u1", "p1")}));  // a relist keeps what was seen
  agent.SampleOnce();
  CHECK(agent.Uses().at(0).peak == 95 << 20);
  agent.UpdatePod("DELETED", Pod("u1", "p1"));
  CHECK(agent.Uses().empty());
  agent.UpdatePod("ADDED", Pod("u3", "p3"));
  node.used["/k/pods/u3/volumes/kubernetes.io~empty-dir/dshm"] = 1 << 20;
  agent.SampleOnce();
  CHECK(agent.Uses().at(0).pod == "p3");
}

TEST_CASE("ShmAgent's metrics port serves the gauges, labelled, and its probes", "[shm_agent][net]") {
  FakeNode node;
  AgentOptions o;
  o.kubelet_dir = "/k";
  o.bind_address = "127.0.0.1";
  o.metrics_port = 0;
  ShmAgent agent(o, nullptr, node.statfs());
  agent.SetPods(json::array({Pod("u1", "p1")}));
  node.used[kPath] = 96 << 20;
  REQUIRE(agent.Start());
  agent.SampleOnce();
  httplib::Client client("127.0.0.1", agent.metrics_port());
  auto res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  const std::string labels = R"({namespace="ml",pod="p1",volume="dshm",workload="Job/train"})";
  CHECK(res->body.find("shmguard_pod_shm_used_bytes" + labels + " 100663296\n") != std::string::npos);
  CHECK(res->body.find("shmguard_pod_shm_size_bytes" + labels + " 104857600\n") != std::string::npos);
  CHECK(res->body.find("shmguard_pod_shm_peak_bytes" + labels + " 100663296\n") != std::string::npos);
  CHECK(res->body.find("# TYPE shmguard_pod_shm_used_bytes gauge\n") != std::string::npos);
  // Recommended against actual: no plan on the pod, so no planned gauge; its peak × 1.5 (the
  // default observed.margin), in whole MiB, is what it teaches.
  CHECK(res->body.find("shmguard_pod_shm_planned_bytes{") == std::string::npos);
  CHECK(res->body.find("shmguard_pod_shm_learned_bytes" + labels + " 150994944\n") != std::string::npos);
  json planned = Pod("u1", "p1");
  planned["metadata"]["annotations"]["shmguard.io/plan"] = R"({"gpus":8,"required":"17332Mi","workers":8})";
  agent.UpdatePod("MODIFIED", planned);
  res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->body.find("shmguard_pod_shm_planned_bytes" + labels + " 18173919232\n") != std::string::npos);
  auto ready = client.Get("/readyz");
  REQUIRE(ready);
  CHECK(ready->status == 200);
  agent.Stop();
}

TEST_CASE("ShmAgent reads device plugins' mounts at /dev/shm from the kubelet's checkpoint, and which are hidden",
          "[shm_agent]") {
  test::TempDir dir;
  const std::string checkpoint = dir.File("kubelet_internal_checkpoint");
  FakeNode node;
  AgentOptions o;
  o.kubelet_dir = "/k";
  o.device_checkpoint = checkpoint;
  ShmAgent agent(o, nullptr, node.statfs());
  json mps_only = Pod("u2", "mps");  // its dshm is not at /dev/shm: the device's mount is what it has
  mps_only["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] = "/scratch";
  agent.SetPods(json::array({Pod("u1", "patched"), mps_only}));
  agent.SampleOnce();
  CHECK(agent.DeviceUses().empty());  // no checkpoint yet: nothing

  test::ReplaceFile(checkpoint, test::DeviceCheckpoint({
                                    {"u1", "t", "nvidia.com/gpu.shared", {{"/dev/shm", "/run/nvidia/mps/shm"}}},
                                    {"u2", "t", "nvidia.com/gpu.shared", {{"/dev/shm", "/run/nvidia/mps/shm"}}},
                                    {"u9", "t", "nvidia.com/gpu.shared", {{"/dev/shm", "/x"}}},  // not this node's
                                    {"u1", "t", "nvidia.com/gpu", {}},
                                }));
  agent.SampleOnce();
  auto uses = agent.DeviceUses();
  REQUIRE(uses.size() == 2);  // in the informer's order: namespace/name
  CHECK(uses[0].pod == "mps");
  CHECK_FALSE(uses[0].hidden);
  CHECK(uses[0].resource == "nvidia.com/gpu.shared");
  CHECK(uses[1].pod == "patched");
  CHECK(uses[1].hidden);  // its dshm is mounted over the daemon's tmpfs
  const std::string metrics = agent.RenderMetrics();
  CHECK(metrics.find(R"(shmguard_pod_shm_device_mount{namespace="ml",pod="patched",container="t",)"
                     R"(resource="nvidia.com/gpu.shared",host_path="/run/nvidia/mps/shm",hidden="true"} 1)") !=
        std::string::npos);
  CHECK(metrics.find("shmguard_agent_device_checkpoint_errors_total 0\n") != std::string::npos);

  test::ReplaceFile(checkpoint, "{\"Data\": 7}");  // unreadable: counted once, nothing shown
  agent.SampleOnce();
  agent.SampleOnce();
  CHECK(agent.DeviceUses().empty());
  CHECK(agent.RenderMetrics().find("shmguard_agent_device_checkpoint_errors_total 1\n") != std::string::npos);
}

TEST_CASE("ShmAgent follows its node's pods through an informer, and Stop closes the watch and joins",
          "[shm_agent][net]") {
  test::FakeApi api([](const test::FakeRequest& r, size_t) {
    test::FakeAnswer a;
    if (r.watch) {
      a.silence = std::chrono::milliseconds(30000);  // open and silent
    } else {
      json list = {{"metadata", {{"resourceVersion", "3"}}}, {"items", json::array({Pod("u1", "p1")})}};
      a.body = list.dump();
    }
    return a;
  });
  FakeNode node;
  AgentOptions o;
  o.kubelet_dir = "/k";
  o.node_name = "gpu-1";
  o.bind_address = "127.0.0.1";
  o.metrics_port = 0;
  auto agent =
      std::make_unique<ShmAgent>(o, std::make_shared<kube::KubeClient>(api.Config(), 1000, 100), node.statfs());
  REQUIRE(agent->Start());
  httplib::Client client("127.0.0.1", agent->metrics_port());
  REQUIRE(test::Eventually([&] {
    auto ready = client.Get("/readyz");
    return ready && ready->status == 200;
  }));
  REQUIRE(api.WaitFor(2));
  auto seen = api.Seen();
  CHECK(seen[0].param("fieldSelector") == "spec.nodeName=gpu-1");
  CHECK(seen[1].watch);
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("shmguard_agent_pods 1\n") != std::string::npos);
  CHECK(metrics->body.find("shmguard_agent_lists_total 1\n") != std::string::npos);
  auto start = std::chrono::steady_clock::now();
  agent->Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  agent.reset();  // nothing it started may still run (the ASan and TSan builds would say)
  CHECK(api.Seen().size() == 2);
}

}  // namespace
}  // namespace shmguard::agent
