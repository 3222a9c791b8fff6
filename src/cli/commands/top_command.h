// `shmguard top`: what the pods of a namespace (or of every namespace, or of one node) use of
// their /dev/shm, as the node agents measure it, read through the API server as `kubectl top`
// reads metrics: each agent pod's /metrics through the pods/proxy subresource.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_metrics.h"
#include "cli/program/exit_code.h"

namespace shmguard::cli {

using agent::ShmUse;

// `rows` as a table (NAMESPACE only when `all_namespaces`), sorted by namespace, pod, volume;
// sizes in Mi with one decimal, PEAK% of the size; a device's mount as its resource, with no
// sizes. Every text an agent sent is printed printable (io::Printable: control characters as
// \xNN) and at most 253 bytes (a Kubernetes name's limit). "No /dev/shm volumes ..." when empty.
void PrintTop(std::vector<ShmUse> rows, bool all_namespaces, std::ostream& out);

// What `shmguard top` reads of one agent: at most this many bytes of its /metrics, within this
// time (an agent of 1,000 pods serves about 0.5 MB).
inline constexpr size_t kMaxAgentMetricsBytes = size_t{16} << 20;
inline constexpr int kAgentMetricsSeconds = 10;

struct TopOptions {
  std::string namespace_;        // -n; default: the kubeconfig context's namespace, else "default"
  bool all_namespaces = false;   // -A
  std::string node;              // --node: only the agent of this node
  std::string kubeconfig;        // default: $KUBECONFIG's first file, else ~/.kube/config, else in-cluster
  std::string context;           // default: the kubeconfig's current-context
  std::string output = "table";  // table or json
  // Where the agents are: the chart's agent.namespace, and the labels of its DaemonSet's pods. A
  // pod elsewhere, or labelled only app.kubernetes.io/component=agent as many agents are, is not
  // read.
  std::string agent_namespace = "shmguard-agent";
  std::string agent_selector = "app.kubernetes.io/name=shmguard-agent,app.kubernetes.io/component=agent";
  // The bounds on one agent's answer (no flags: tests make them small).
  size_t agent_max_bytes = kMaxAgentMetricsBytes;
  std::chrono::milliseconds agent_deadline = std::chrono::seconds(kAgentMetricsSeconds);
};

CLI::App* AddTopCommand(CLI::App& app, TopOptions& options);

// kOk with the table (agents that cannot be read, or send more than agent_max_bytes or take
// longer than agent_deadline, are named on `err`, the others still shown); kUsage
// when there is no API configuration, the API refuses the list of agents, or no agent runs (the
// chart's agent.enabled).
ExitCode RunTop(const TopOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
