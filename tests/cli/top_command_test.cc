// ParseShmMetrics reads back what the agent serves; PrintTop's table. RunTop against an API
// server with agents is in e2e/node.
#include "cli/top_command.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/shm_agent.h"

namespace shmguard::cli {
namespace {

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

TEST_CASE("PrintTop sorts by namespace and pod, and shows the namespace only for every namespace", "[top_command]") {
  std::vector<ShmUse> rows = {
      {"nlp", "b", "dshm", "Job/b", "node-1", 1 << 20, 4 << 20, 2 << 20},  // used, size, peak
      {"ml", "a", "dshm", "Deployment/a", "node-2", 3 << 20, 64 << 20, 60 << 20},
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

}  // namespace
}  // namespace shmguard::cli
