// ParseShmMetrics reads back what the agent serves; PrintTop's table; RunTop against an API
// server that misbehaves on cue (where it looks for agents, and agents that send escapes, too
// much, or too slowly). RunTop against the real API server with agents is in e2e/node.
#include "cli/commands/top_command.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/shm_agent.h"
#include "kube/fake_api.h"
#include "test_util.h"

namespace shmguard::cli {
namespace {

using agent::ParseShmMetrics;
using nlohmann::json;

json Pod(const std::string& uid, const std::string& ns, const std::string& name, const std::string& profile) {
  json pod = json::parse(R"({"metadata":{"annotations":{}},
    "spec":{"volumes":[{"name":"dshm","emptyDir":{"medium":"Memory"}}],
            "containers":[{"name":"c","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]}})");
  pod["metadata"]["uid"] = uid;
  pod["metadata"]["namespace"] = ns;
  pod["metadata"]["name"] = name;
  if (!profile.empty()) pod["metadata"]["annotations"]["shmguard.io/profile"] = profile;
  return pod;
}

TEST_CASE("ParseShmMetrics reads back every volume the agent's metrics show, escaped labels included",
          "[top_command]") {
  agent::AgentOptions o;
  o.kubelet_dir = "/k";
  std::map<std::string, uint64_t> used = {{"u1", 30 << 20}, {"u2", 7 << 20}};
  agent::ShmAgent agent(o, nullptr, [&](const std::string& path) -> std::optional<agent::FsUse> {
    for (const auto& [uid, bytes] : used) {
      if (path.find("/pods/" + uid + "/") != std::string::npos) return agent::FsUse{bytes, 64 << 20, true};
    }
    return std::nullopt;
  });
  agent.SetPods(json::array({Pod("u1", "ml", "train-0", ""), Pod("u2", "nlp", "bert", "a \"quoted\\ name")}));
  agent.SampleOnce();
  used["u1"] = 10 << 20;  // the peak stays at 30 MiB
  agent.SampleOnce();
  auto rows = ParseShmMetrics(agent.RenderMetrics());
  REQUIRE(rows.size() == 2);
  std::map<std::string, ShmUse> by_pod;
  for (const auto& r : rows) by_pod[r.pod] = r;
  CHECK(by_pod["train-0"].namespace_ == "ml");
  CHECK(by_pod["train-0"].volume == "dshm");
  CHECK(by_pod["train-0"].workload == "Pod/train-0");
  CHECK(by_pod["train-0"].used == 10 << 20);
  CHECK(by_pod["train-0"].peak == 30 << 20);
  CHECK(by_pod["train-0"].size == 64 << 20);
  CHECK(by_pod["bert"].workload == "profile/a \"quoted\\ name");
  CHECK(ParseShmMetrics("# HELP x\nshmguard_pod_shm_used_bytes{broken 1\nother_metric{a=\"b\"} 2\n").empty());
}

TEST_CASE("ParseShmMetrics reads a device plugin's mount at /dev/shm, and PrintTop shows it without sizes",
          "[top_command]") {
  const std::string text =
      "shmguard_pod_shm_device_mount{namespace=\"ml\",pod=\"mps-0\",container=\"t\","
      "resource=\"nvidia.com/gpu.shared\",host_path=\"/run/nvidia/mps/shm\",hidden=\"false\"} 1\n"
      "shmguard_pod_shm_device_mount{namespace=\"ml\",pod=\"mps-1\",container=\"t\","
      "resource=\"nvidia.com/gpu.shared\",host_path=\"/run/nvidia/mps/shm\",hidden=\"true\"} 1\n";
  auto rows = ParseShmMetrics(text);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].device == "nvidia.com/gpu.shared");
  CHECK(rows[0].container == "t");
  CHECK(rows[0].host_path == "/run/nvidia/mps/shm");
  CHECK_FALSE(rows[0].hidden);
  CHECK(rows[1].hidden);
  std::ostringstream out;
  PrintTop(rows, false, out);
  CHECK(out.str() ==
        "POD     VOLUME                                   USED   PEAK   SIZE   PEAK%   WORKLOAD   NODE\n"
        "mps-0   nvidia.com/gpu.shared (device)           -      -      -      -                  \n"
        "mps-1   nvidia.com/gpu.shared (device, hidden)   -      -      -      -                  \n");
}

TEST_CASE("PrintTop sorts by namespace and pod, and shows the namespace only for every namespace", "[top_command]") {
  std::vector<ShmUse> rows = {
      {"nlp", "b", "dshm", "Job/b", "node-1", 1 << 20, 4 << 20, 2 << 20, "", "", "", false},  // used, size, peak
      {"ml", "a", "dshm", "Deployment/a", "node-2", 3 << 20, 64 << 20, 60 << 20, "", "", "", false},
  };
  std::ostringstream all, one, none;
  PrintTop(rows, true, all);
  CHECK(all.str() ==
        "NAMESPACE   POD   VOLUME   USED    PEAK     SIZE     PEAK%   WORKLOAD       NODE\n"
        "ml          a     dshm     3.0Mi   60.0Mi   64.0Mi   94%     Deployment/a   node-2\n"
        "nlp         b     dshm     1.0Mi   2.0Mi    4.0Mi    50%     Job/b          node-1\n");
  PrintTop({rows[1]}, false, one);
  CHECK(one.str().rfind("POD   VOLUME", 0) == 0);
  PrintTop({}, false, none);
  CHECK(none.str().find("No /dev/shm volumes") == 0);
}

// A kubeconfig for the fake API server: its CA, a token file.
std::string WriteKubeconfig(const test::FakeApi& api) {
  const kube::KubeConfig c = api.Config();
  const std::string path = api.File("kubeconfig");
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                      << "clusters: [{name: fake, cluster: {server: '" << c.server << "', certificate-authority: '"
                      << c.ca_file << "'}}]\n"
                      << "users: [{name: fake, user: {tokenFile: '" << c.token_file << "'}}]\n"
                      << "contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: ml}}]\n";
  return path;
}

json AgentPod(const std::string& ns, const std::string& name, const std::string& node) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec",
           {{"nodeName", node},
            {"containers", {{{"name", "agent"}, {"ports", {{{"name", "metrics"}, {"containerPort", 9100}}}}}}}}},
          {"status", {{"phase", "Running"}}}};
}

const std::string kSample =
    "shmguard_pod_shm_used_bytes{namespace=\"ml\",pod=\"train\",volume=\"dshm\",workload=\"Job/train\"} 1048576\n"
    "shmguard_pod_shm_size_bytes{namespace=\"ml\",pod=\"train\",volume=\"dshm\",workload=\"Job/train\"} 4194304\n";

TEST_CASE("RunTop asks only the chart's agents, and bounds what each may send", "[top_command]") {
  // Agents a, b, c on three nodes: a answers well, b sends escapes in a pod's name, c's answer
  // depends on the case.
  struct Case {
    std::string name;
    test::FakeAnswer c;
    std::string err;  // what stderr names about agent c
  };
  const std::vector<Case> cases = {
      {"too much", {200, std::string(4096, '#'), "", {}}, "shmguard-agent/c on node n3: "},
      {"too slow", {200, "#", "", std::chrono::milliseconds(3000)}, "shmguard-agent/c on node n3: "},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      test::FakeApi api(
          [&](const test::FakeRequest& r, size_t) -> test::FakeAnswer {
            if (r.path == "/api/v1/namespaces/shmguard-agent/pods") {
              return {200,
                      json{{"kind", "PodList"},
                           {"items",
                            {AgentPod("shmguard-agent", "a", "n1"), AgentPod("shmguard-agent", "b", "n2"),
                             AgentPod("shmguard-agent", "c", "n3")}}}
                          .dump(),
                      "",
                      {}};
            }
            if (r.path == "/api/v1/namespaces/shmguard-agent/pods/a:9100/proxy/metrics") return {200, kSample, "", {}};
            if (r.path == "/api/v1/namespaces/shmguard-agent/pods/b:9100/proxy/metrics") {
              return {200,
                      "shmguard_pod_shm_size_bytes{namespace=\"ml\",pod=\"evil\\u001b[2J\x1b]0;x\x07\",volume=\"dshm\"}"
                      " 1\n",
                      "",
                      {}};
            }
            if (r.path == "/api/v1/namespaces/shmguard-agent/pods/c:9100/proxy/metrics") return c.c;
            return {404, R"({"kind":"Status","message":"not found"})", "", {}};
          },
          "/api/v1/namespaces/.*");
      TopOptions o;
      o.kubeconfig = WriteKubeconfig(api);
      o.agent_max_bytes = 1024;
      o.agent_deadline = std::chrono::milliseconds(1000);
      std::ostringstream out, err;
      const auto started = std::chrono::steady_clock::now();
      CHECK(RunTop(o, out, err) == ExitCode::kOk);
      CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(1000 + 1500 * test::kSlowdown));
      // The list went to the chart's namespace with the chart's labels, never to every namespace.
      const auto seen = api.Seen();
      REQUIRE_FALSE(seen.empty());
      CHECK(seen[0].path == "/api/v1/namespaces/shmguard-agent/pods");
      CHECK(seen[0].param("labelSelector") ==
            "app.kubernetes.io/name=shmguard-agent,app.kubernetes.io/component=agent");
      // a's row is shown; b's name has its control characters as \xNN; c is named on stderr.
      CHECK(out.str().find("train") != std::string::npos);
      CHECK(out.str().find('\x1b') == std::string::npos);
      CHECK(out.str().find("\\x1b") != std::string::npos);
      CHECK(err.str().find(c.err) != std::string::npos);
      CHECK(err.str().find("shmguard-agent/a") == std::string::npos);
    }
  }
}

TEST_CASE("RunTop names the namespace and labels it looked for when no agent runs there", "[top_command]") {
  test::FakeApi api(
      [](const test::FakeRequest&, size_t) -> test::FakeAnswer {
        return {200, R"({"kind":"PodList","items":[]})", "", {}};
      },
      "/api/v1/namespaces/.*");
  TopOptions o;
  o.kubeconfig = WriteKubeconfig(api);
  o.agent_namespace = "monitoring";
  o.agent_selector = "app=shm";
  std::ostringstream out, err;
  CHECK(RunTop(o, out, err) == ExitCode::kUsage);
  CHECK(api.Seen().at(0).path == "/api/v1/namespaces/monitoring/pods");
  CHECK(api.Seen().at(0).param("labelSelector") == "app=shm");
  CHECK(err.str().find("(pods labelled app=shm in namespace monitoring)") != std::string::npos);
}

// An agent's unpatched pods are rows of their own: what shmguard would give them, marked.
TEST_CASE("ParseShmMetrics and PrintTop show a pod with less /dev/shm than shmguard would give", "[top_command]") {
  const std::string text =
      "# HELP shmguard_pod_shm_unpatched_required_bytes x\n"
      "shmguard_pod_shm_unpatched_required_bytes{namespace=\"ml\",pod=\"train\",policy_made=\"false\"} 14761852928\n";
  auto rows = ParseShmMetrics(text);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].unpatched_required == 14761852928u);
  std::ostringstream out;
  PrintTop(rows, false, out);
  CHECK_THAT(out.str(), Catch::Contains("train"));
  CHECK_THAT(out.str(), Catch::Contains("(not patched)"));
  CHECK_THAT(out.str(), Catch::Contains("needs 14078.0Mi"));
  CHECK_THAT(out.str(), Catch::Contains("UNPATCHED"));
}

}  // namespace
}  // namespace shmguard::cli
