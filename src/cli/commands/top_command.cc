// PrintTop and RunTop: the agents' gauges read through the API server (agent_metrics.h reads them).
#include "cli/commands/top_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <tuple>

#include "agent/agent_metrics.h"
#include "io/words/printable.h"
#include "kube/kube_client.h"

namespace shmguard::cli {

using agent::ParseShmMetrics;
using agent::ShmUse;

namespace {

using nlohmann::json;

std::string Mi(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fMi", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// kubectl's order of kubeconfig files: --kubeconfig, the first of $KUBECONFIG, ~/.kube/config.
std::string KubeconfigPath(const TopOptions& o) {
  if (!o.kubeconfig.empty()) return o.kubeconfig;
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first(env);
    return first.substr(0, first.find(':'));
  }
  const char* home = std::getenv("HOME");
  std::string path = std::string(home ? home : "") + "/.kube/config";
  std::error_code ec;
  return home && std::filesystem::exists(path, ec) ? path : "";
}

}  // namespace

void PrintTop(std::vector<ShmUse> rows, bool all_namespaces, std::ostream& out) {
  if (rows.empty()) {
    out << "No /dev/shm volumes: no pod here mounts a memory-backed emptyDir at /dev/shm\n";
    return;
  }
  std::sort(rows.begin(), rows.end(), [](const ShmUse& a, const ShmUse& b) {
    return std::tie(a.namespace_, a.pod, a.volume) < std::tie(b.namespace_, b.pod, b.volume);
  });
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> head = {"POD", "VOLUME", "USED", "PEAK", "SIZE", "PEAK%", "WORKLOAD", "NODE"};
  if (all_namespaces) head.insert(head.begin(), "NAMESPACE");
  table.push_back(head);
  for (const auto& r : rows) {
    std::string percent = r.size ? std::to_string((r.peak * 100 + r.size / 2) / r.size) + "%" : "-";
    std::vector<std::string> row = {r.pod, r.volume, Mi(r.used), Mi(r.peak), Mi(r.size), percent, r.workload, r.node};
    if (!r.device.empty()) row = {r.pod, r.volume, "-", "-", "-", "-", r.workload, r.node};  // the device's tmpfs
    // A pod with less /dev/shm than shmguard would give it: what it needs, in the SIZE column.
    if (r.unpatched_required) {
      row = {r.pod, r.volume, "-", "-", "needs " + Mi(r.unpatched_required), "-", "UNPATCHED", r.node};
    }
    if (all_namespaces) row.insert(row.begin(), r.namespace_);
    table.push_back(std::move(row));
  }
  std::vector<size_t> width(head.size(), 0);
  for (auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) {
      row[i] = io::Printable(row[i], 253);  // what an agent sent is text from outside
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) {
      out << row[i];
      if (i + 1 < row.size()) out << std::string(width[i] - row[i].size() + 3, ' ');
    }
    out << "\n";
  }
}

CLI::App* AddTopCommand(CLI::App& app, TopOptions& o) {
  auto* cmd = app.add_subcommand("top", "Show what pods use of their /dev/shm, as the node agents measure it");
  cmd->add_option("-n,--namespace", o.namespace_, "the namespace (default: the kubeconfig context's, else default)");
  cmd->add_flag("-A,--all-namespaces", o.all_namespaces, "every namespace");
  cmd->add_option("--node", o.node, "only the pods of this node");
  cmd->add_option("--kubeconfig", o.kubeconfig, "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)");
  cmd->add_option("--context", o.context, "the kubeconfig context (default: its current-context)");
  cmd->add_option("-o,--output", o.output, "table or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--agent-namespace", o.agent_namespace, "the agents' namespace (the chart's agent.namespace)")
      ->capture_default_str();
  cmd->add_option("--agent-selector", o.agent_selector, "the labels of the agents' pods")->capture_default_str();
  return cmd;
}

namespace {

// The port an agent's pod serves its metrics on: its container port named "metrics", else 8080
// (a number: the pod proxy does not resolve a port's name).
int MetricsPort(const json& pod) {
  int port = 8080;
  for (const auto& c : pod.value("spec", json::object()).value("containers", json::array())) {
    for (const auto& p : c.value("ports", json::array())) {
      if (p.value("name", "") == "metrics") port = p.value("containerPort", port);
    }
  }
  return port;
}

// The rows one running agent's pod gives for namespace `ns` (every namespace with -A), through
// the API server's pod proxy; false, having said why on `err`, when it could not be read.
bool ReadAgent(kube::KubeClient& client, const json& pod, const TopOptions& o, const std::string& ns,
               std::vector<ShmUse>& rows, std::ostream& err) {
  const json& meta = pod.value("metadata", json::object());
  const std::string name = meta.value("name", ""), agent_ns = meta.value("namespace", "");
  const std::string node = pod.value("spec", json::object()).value("nodeName", "");
  kube::RequestOptions bounded;
  bounded.max_body_bytes = o.agent_max_bytes;
  bounded.deadline = o.agent_deadline;
  auto metrics = client.Request("GET",
                                "/api/v1/namespaces/" + kube::QueryValue(agent_ns) + "/pods/" + kube::QueryValue(name) +
                                    ":" + std::to_string(MetricsPort(pod)) + "/proxy/metrics",
                                "", "application/json", bounded);
  if (!metrics || !metrics->ok()) {
    err << "shmguard top: the agent " << io::Printable(agent_ns + "/" + name, 300) << " on node "
        << io::Printable(node, 253) << ": "
        << io::Printable(metrics ? metrics->Message() : metrics.error().ToString(), 1024) << "\n";
    return false;
  }
  for (auto& r : ParseShmMetrics(metrics->text)) {
    if (!o.all_namespaces && r.namespace_ != ns) continue;
    r.node = node;
    rows.push_back(std::move(r));
  }
  return true;
}

// `top -o json`: the rows, and how many agents run and were read.
void PrintTopJson(const std::vector<ShmUse>& rows, int running, int reached, std::ostream& out) {
  json items = json::array();
  for (const auto& r : rows) {
    items.push_back({{"namespace", r.namespace_},
                     {"pod", r.pod},
                     {"volume", r.volume},
                     {"workload", r.workload},
                     {"node", r.node},
                     {"used_bytes", r.used},
                     {"peak_bytes", r.peak},
                     {"size_bytes", r.size}});
    if (!r.device.empty()) {
      items.back()["device"] = {
          {"resource", r.device}, {"container", r.container}, {"host_path", r.host_path}, {"hidden", r.hidden}};
    }
  }
  out << json{{"items", items}, {"agents", running}, {"agents_read", reached}}.dump(2) << "\n";
}

ExitCode ReadAgents(const TopOptions& o, std::ostream& out, std::ostream& err) {
  const std::string path = KubeconfigPath(o);
  auto config = path.empty() ? kube::KubeConfig::InCluster() : kube::KubeConfig::FromKubeconfig(path, o.context);
  if (!config) {
    err << "shmguard top: " << config.error().ToString() << "\n";
    return ExitCode::kUsage;
  }
  const std::string ns =
      o.namespace_.empty() ? (config->context_namespace.empty() ? "default" : config->context_namespace) : o.namespace_;
  kube::KubeClient client(*config, 50, 100);
  std::string list = "/api/v1/namespaces/" + kube::QueryValue(o.agent_namespace) +
                     "/pods?labelSelector=" + kube::QueryValue(o.agent_selector);
  if (!o.node.empty()) list += "&fieldSelector=" + kube::QueryValue("spec.nodeName=" + o.node);
  auto agents = client.Request("GET", list);
  if (!agents || !agents->ok()) {
    err << "shmguard top: listing the agents' pods: " << (agents ? agents->Message() : agents.error().ToString())
        << "\n";
    return ExitCode::kUsage;
  }
  if (!agents->body.is_object() || !agents->body.contains("items") || !agents->body.at("items").is_array()) {
    err << "shmguard top: listing the agents' pods: the answer is not a pod list\n";
    return ExitCode::kUsage;
  }
  std::vector<ShmUse> rows;
  int reached = 0, running = 0;
  for (const auto& pod : agents->body.at("items")) {
    if (!pod.is_object() || pod.value("status", json::object()).value("phase", "") != "Running") continue;
    ++running;
    if (ReadAgent(client, pod, o, ns, rows, err)) ++reached;
  }
  if (running == 0) {
    err << "shmguard top: no node agent runs" << (o.node.empty() ? "" : " on node " + io::Printable(o.node))
        << " (pods labelled " << o.agent_selector << " in namespace " << o.agent_namespace
        << "): install the chart with agent.enabled, or name where it runs (--agent-namespace, --agent-selector)\n";
    return ExitCode::kUsage;
  }
  if (o.output == "json") {
    PrintTopJson(rows, running, reached, out);
  } else {
    PrintTop(std::move(rows), o.all_namespaces, out);
  }
  return reached > 0 ? ExitCode::kOk : ExitCode::kUsage;
}

}  // namespace

ExitCode RunTop(const TopOptions& o, std::ostream& out, std::ostream& err) {
  try {
    return ReadAgents(o, out, err);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type in the API's answer
    err << "shmguard top: the API server's answer could not be read: " << e.what() << "\n";
    return ExitCode::kUsage;
  }
}

}  // namespace shmguard::cli
