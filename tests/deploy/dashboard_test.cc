// The chart's Grafana dashboard (charts/shmguard/dashboards/shmguard.json) against what shmguard
// exports: every metric a panel queries is one that `shmguard-agent` or `shmguard-webhook` serves,
// with the labels the panel groups by.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "agent/shm_agent.h"
#include "server/metrics.h"
#include "test_util.h"

namespace shmguard::test {
namespace {

using nlohmann::json;

// Each metric family in a Prometheus text, with the label names its samples carry.
std::map<std::string, std::set<std::string>> Families(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  static const std::regex type(R"(^# TYPE (\w+) )"), sample(R"(^(\w+)\{([^}]*)\})"), label(R"((\w+)=")");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, type)) out[m[1]];
    if (std::regex_search(line, m, sample)) {
      std::string name = m[1], labels = m[2];
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        std::string s = suffix;
        if (!out.count(name) && name.size() > s.size() && name.ends_with(s)) name.resize(name.size() - s.size());
      }
      for (std::sregex_iterator it(labels.begin(), labels.end(), label), end; it != end; ++it) {
        out[name].insert((*it)[1]);
      }
    }
  }
  return out;
}

std::map<std::string, std::set<std::string>> Exported() {
  agent::AgentOptions o;
  o.kubelet_dir = "/k";
  agent::ShmAgent agent(o, nullptr, [](const std::string&) { return agent::FsUse{1, 2, true}; });
  agent.SetPods(json::parse(R"([{"metadata":{"uid":"u","namespace":"ml","name":"p"},
    "spec":{"volumes":[{"name":"dshm","emptyDir":{"medium":"Memory"}}],
            "containers":[{"name":"c","volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]}}])"));
  agent.SampleOnce();
  server::Metrics webhook;
  webhook.ObserveRequest("/mutate", "Pod", "patched", 0.001);
  auto families = Families(agent.RenderMetrics());
  for (auto& [name, labels] : Families(webhook.Render("v"))) families[name].insert(labels.begin(), labels.end());
  return families;
}

TEST_CASE("The dashboard queries only metrics shmguard exports, by labels they carry", "[dashboard]") {
  auto text = ReadText(std::string(SOURCE_DIR) + "/charts/shmguard/dashboards/shmguard.json");
  REQUIRE_FALSE(text.empty());
  auto dashboard = json::parse(text);
  auto exported = Exported();
  static const std::regex metric(R"(\bshmguard_\w+)"), by(R"(by \(([^)]*)\))");
  int queries = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"];
      CAPTURE(panel["title"], expr);
      ++queries;
      std::set<std::string> labels;
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
        std::string name = it->str();
        if (name.ends_with("_bucket")) name.resize(name.size() - 7);
        CAPTURE(name);
        REQUIRE(exported.count(name) == 1);
        labels.insert(exported[name].begin(), exported[name].end());
      }
      labels.insert("le");  // histogram_quantile's
      for (std::sregex_iterator it(expr.begin(), expr.end(), by), end; it != end; ++it) {
        std::string list = (*it)[1];
        std::istringstream names(list);
        for (std::string name; std::getline(names, name, ',');) {
          name.erase(0, name.find_first_not_of(' '));
          CHECK(labels.count(name) == 1);
        }
      }
    }
  }
  CHECK(queries >= 7);
}

}  // namespace
}  // namespace shmguard::test
