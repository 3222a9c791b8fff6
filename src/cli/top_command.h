// `shmguard top`: what the pods of a namespace (or of every namespace, or of one node) use of
// their /dev/shm, as the node agents measure it, read through the API server as `kubectl top`
// reads metrics: each agent pod's /metrics through the pods/proxy subresource.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "cli/exit_code.h"

namespace shmguard::cli {

// One pod volume, as an agent reports it.
struct ShmUse {
  std::string namespace_, pod, volume, workload;
  std::string node;                       // the node of the agent that reported it
  uint64_t used = 0, size = 0, peak = 0;  // bytes
};

// The shmguard_pod_shm_{used,size,peak}_bytes samples of an agent's /metrics text (the
// Prometheus text format, label values escaped as it escapes them), one ShmUse per volume, in
// the order the text first names them. Other lines are ignored.
std::vector<ShmUse> ParseShmMetrics(std::string_view text);

// `rows` as a table (NAMESPACE only when `all_namespaces`), sorted by namespace, pod, volume;
// sizes in Mi with one decimal, PEAK% of the size. "No /dev/shm volumes ..." when empty.
void PrintTop(std::vector<ShmUse> rows, bool all_namespaces, std::ostream& out);

struct TopOptions {
  std::string namespace_;        // -n; default: the kubeconfig context's namespace, else "default"
  bool all_namespaces = false;   // -A
  std::string node;              // --node: only the agent of this node
  std::string kubeconfig;        // default: $KUBECONFIG's first file, else ~/.kube/config, else in-cluster
  std::string context;           // default: the kubeconfig's current-context
  std::string output = "table";  // table or json
};

CLI::App* AddTopCommand(CLI::App& app, TopOptions& options);

// kOk with the table (agents that cannot be read are named on `err`, the others still shown);
// kUsage when there is no API configuration, the API refuses the list of agents, or no agent
// runs (the chart's agent.enabled).
ExitCode RunTop(const TopOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
